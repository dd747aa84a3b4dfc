// Package webhook serves typed admission webhooks (defaulting and
// validation) for a type T, and the conversion webhook of multi-version
// CRDs, on the manager's webhook server, which is controller-runtime's
// webhook.Server (see manager.Options.Webhook).
//
// Its contract:
//
//   - Typed: Register[T] takes Hooks[T], whose Defaulter[T] and
//     Validator[T] are controller-runtime's admission interfaces, so a
//     defaulter or validator written for ctrl.NewWebhookManagedBy works
//     unchanged. DefaulterFunc and ValidatorFuncs adapt functions.
//   - kubebuilder's paths: MutatePath, ValidatePath and ConversionPath are
//     the paths kubebuilder's markers name, so a project's webhook
//     configurations port unchanged.
//   - Errors kubectl shows well: apierrors.NewInvalid refuses with 422
//     and each field's path and message; another API status keeps its
//     reason and code; any other error refuses with its text (403).
//   - Warnings a Validator returns, with or without an error, reach the
//     client as Warning headers.
//   - Conversion: RegisterConversion[H] converts through the hub version H,
//     with controller-runtime's semantics: kubebuilder's Hub and
//     Convertible methods, or typed functions per version
//     (Conversion.Spokes, SpokeFuncs). A version that cannot convert fails
//     RegisterConversion, not the first request.
//   - Bounded: a body of 7 MiB or more is refused with 413 on every path;
//     the admission paths share a budget of twice that, and conversions
//     another, by Content-Length. 2 MiB of each is only for bodies of at
//     most 256 KiB; a larger body that finds the rest taken gets 503 at
//     once, a small one waits for room until its context ends. An
//     admitted body must arrive within 5 s plus 1 s per MiB.
//   - Callers: with manager.Options.Webhook.ClientCAFile, the admission
//     paths take only clients with a certificate that CA signed;
//     /convert takes any, since the API server presents none to
//     conversion webhooks (docs/webhooks.md, "Who may call the webhooks").
//   - Served on every replica, leader or not; /readyz fails until the
//     server serves TLS (see package manager).
//   - Observable: requests log through the manager's logger, named
//     "webhook" (the server's own start and stop lines go through
//     ctrl.SetLogger's); controller-runtime's request metrics
//     (controller_runtime_webhook_latency_seconds and the like, by path)
//     are served at the manager's /metrics.
//
// # Differences from controller-runtime's builder
//
// ctrl.NewWebhookManagedBy(mgr, &T{}).WithDefaulter(d).WithValidator(v).Complete()
// becomes webhook.Register(mgr, webhook.Hooks[T]{Defaulter: d, Validator: v}):
//
//   - One value, not a chain: the type is named once, and mistakes are
//     errors of Register, not panics: a path registered twice is
//     ErrRegistered, a manager without a webhook server ErrNoServer.
//   - No custom paths, log constructors or context functions on Register.
//     Handlers builds a type's webhooks as Register does without serving
//     them, and Serve serves a handler at a path or ServeMux pattern of
//     your choice behind the manager's guard (package fleet serves them
//     once per member cluster so). Panics in a handler are recovered into
//     a 500 response, as in controller-runtime.
//   - Conversion is registered by RegisterConversion[Hub], not by the
//     builder of any version.
//
// docs/security.md is the threat model and checklist for webhooks, where
// a tenant's request is checked against the tenant's own permissions
// (package webhook/requester). Certificates: the server reads them from
// manager.Options.Webhook.CertDir, reloading a new pair without a restart
// (package webhook/certs can keep them there), or takes
// Options.Webhook.GetCertificate; in tests, testenv.Options.Webhook points
// a project's webhook configurations at the local server.
package webhook
