// Package budget is an operator's one API budget: every request the
// manager's clients send passes through a Budget's Transport, which lets
// it go when the budget has a token for it. docs/api-budget.md explains
// the model and the manager's defaults.
//
//   - One bucket per process: a token rate (QPS) and a burst, shared by
//     every client built from the manager's rest.Config, so that adding a
//     client or a controller never adds capacity.
//   - Lanes in strict priority order, with reserves: LaneLease and
//     LaneHealth (never wait: a renewal, or a health check's request,
//     takes a free token, or the next one, at most one in two tokens'
//     time, or goes without one), LaneWebhook,
//     LaneReconcile (at least 20% of the tokens while it waits),
//     LaneInformer (at least 10%). Classify says which lane a request is
//     in; only opkit's own code can name LaneLease and LaneHealth.
//   - Fair shares: within the reconcile lane, controllers get tokens in
//     proportion to their weights (start-time fair queueing), so one that
//     floods cannot starve a quiet one, which is served within a token
//     of asking.
//   - Adapting to the server: a 429 or a Retry-After halves the rate (once
//     a second at most) and empties the bucket; the rate then grows back
//     by 5% of the configured rate a second. Rising latency does the same:
//     when most single-object requests of the last two seconds took over
//     a second and over four times their kind's usual (lists and watches
//     are not measured). Without a configured rate, requests never wait
//     until the first pushback, which sets the rate to half the rate
//     measured; it then grows by a quarter of itself a second, and lifts
//     once it is four times what is sent and the server has not pushed
//     back for 30s. A 429 of priority and fairness narrows a window of
//     requests in flight instead (see window).
//   - Pre-paid: a controller's worker waits for its controller's token
//     before it takes a key (Prepaid, with the queue's permitted Gets),
//     so that keys, not workers holding them, wait; the reconcile's first
//     request spends that token, and a reconcile that sends none gives it
//     back. Limited says, without a lock, whether workers need to.
//   - Cancelable: a request whose context ends while it waits is never
//     sent, and takes no token; nor does a worker's pre-paid wait.
//   - Observable: opkit_api_budget_* metrics by lane and controller, the
//     pushbacks also by reason (429, retry_after, latency).
package budget
