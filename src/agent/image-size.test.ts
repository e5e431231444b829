import { describe, expect, it } from "vitest";
import { gif, jpeg, png, webp } from "../../test/support/images.js";
import { base64ImageSize, imageSize } from "./image-size.js";

describe("the size of an image, read from its header", () => {
  it("reads PNG, GIF, JPEG and the three kinds of WebP", () => {
    expect(imageSize(png(8001, 20))).toEqual({ width: 8001, height: 20 });
    expect(imageSize(gif(640, 2001))).toEqual({ width: 640, height: 2001 });
    expect(imageSize(jpeg(4032, 3024))).toEqual({ width: 4032, height: 3024 });
    expect(imageSize(webp("VP8 ", 2100, 900))).toEqual({ width: 2100, height: 900 });
    expect(imageSize(webp("VP8L", 16383, 2))).toEqual({ width: 16383, height: 2 });
    expect(imageSize(webp("VP8X", 9000, 12000))).toEqual({ width: 9000, height: 12000 });
  });

  it("finds a JPEG's frame header after a long EXIF segment, also from base64", () => {
    const photo = jpeg(6000, 8500, 60_000);
    expect(imageSize(photo)).toEqual({ width: 6000, height: 8500 });
    expect(base64ImageSize(photo.toString("base64"))).toEqual({ width: 6000, height: 8500 });
  });

  it("says nothing of bytes that are no image it knows, or a header cut short", () => {
    expect(imageSize(Buffer.from("not an image at all, just some text"))).toBeUndefined();
    expect(base64ImageSize("iVBORw0KGgo=")).toBeUndefined();
    expect(imageSize(jpeg(100, 100).subarray(0, 12))).toBeUndefined();
  });
});
