// Package load is sloserve's open-loop load generator: it sends inference requests at arrival
// times scheduled in advance, never waiting for answers, so that a slow server cannot slow the
// load down (no coordinated omission). Each latency counts from the request's actual send, the
// clock the server starts on receipt; the generator's own lateness (actual − scheduled send: a
// starved machine's late timers and goroutine starts) is reported apart, with the attainment
// the run would have had counting it, so a starved client is visible and never blamed on the
// server.
package load
