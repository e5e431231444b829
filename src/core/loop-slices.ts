import { performance } from "node:perf_hooks";
import { setImmediate } from "node:timers";

/*
 * Incoming messages taken a few at a time, first come first served, with the event loop
 * turning in between. A platform's socket hands a process its messages in bursts: one read
 * of Slack's Socket Mode held about three hundred events when two hundred people wrote at
 * once, and every one ran its whole intake (the store's queries, the lock, the turn's
 * record, up to the model's request) before the process read anything else. Measured in
 * the load benchmark (Slack, 200 threads): one turn of the event loop lasted 309 ms and the
 * next 181; the model's first words and the platform's answers to the first posts waited
 * behind them. Taken a slice at a time, the answers to earlier messages are read while
 * later ones are still coming in.
 */

/**
 * Milliseconds of message intake after which the next message waits for the event loop's
 * next turn. Small against the 50 ms of event-loop delay the app aims to stay under: the
 * same turn also reads every socket that has something (models' streams, platforms'
 * answers). One message's intake is 1-3 ms of it under load.
 */
export const SLICE_MS = 5;

/** When the current slice began (performance.now()), set by the marker that opens it. */
let sliceStart = 0;
let markerQueued = false;

function openSlice(): void {
  markerQueued = false;
  sliceStart = performance.now();
}

/**
 * Queues the marker that opens the next slice, ahead of any waiter queued after it:
 * immediates run in the order they were queued, one turn of the loop's check phase at a time.
 */
function queueMarker(): void {
  if (markerQueued) return;
  markerQueued = true;
  setImmediate(openSlice);
}

/**
 * Resolves when this message's turn comes: in this turn of the event loop when the slice
 * has room (a message alone waits only for the loop's check phase), else in a later one.
 * Messages go in the order they asked. Node's own timers, not the global ones, so that
 * tests which fake timers still see their messages handled.
 */
export function nextSlice(): Promise<void> {
  return new Promise((resolve) => {
    queueMarker();
    setImmediate(function whenRoom() {
      if (performance.now() - sliceStart <= SLICE_MS) return resolve();
      // Queued during the check phase, so in the next turn: after the marker, before later arrivals.
      queueMarker();
      setImmediate(whenRoom);
    });
  });
}
