// Package bodybudget bounds the request bodies a webhook server reads and
// handles at once, by bytes and by time, so that no caller who reaches
// the port (authenticated or not) can starve the requests the API server
// sends. The manager's admission paths and package webhook's /convert
// each hold one Budget.
//
// Its contract:
//
//   - Sized by what the request says: a body weighs its Content-Length,
//     or the path's limit when it tells none (chunked).
//   - Small bodies have a lane of their own: Reserved bytes of the budget
//     are only for bodies of at most SmallBody (a Mirror, or a conversion
//     of one, is a few KiB), so large bodies, however many, cannot take
//     the whole budget from them. A small body waits for room (first in,
//     first served) until its context ends, then gets 503.
//   - Large bodies are shed, not queued: a body over SmallBody that finds
//     the rest of the budget taken gets 503 at once, unread, so a flood of
//     large bodies costs a refusal each and no waiting goroutine holds a
//     share.
//   - Bodies arrive in bounded time: once admitted, a body must be read
//     within ReadTime(length), a few seconds plus its length at MinRate,
//     or its connection's reads fail; a client that trickles its body
//     gives its share back within seconds.
//
// A Budget is safe for concurrent use.
package bodybudget
