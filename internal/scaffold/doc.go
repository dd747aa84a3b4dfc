// Package scaffold makes operator projects: what "opkit init", "opkit
// create api" and "opkit create webhook" write, kubebuilder's layout with
// opkit's libraries.
//
// Its contract:
//
//   - Inputs are checked before anything is written. A refused input is an
//     *InputError naming the flag, the value and what is allowed; create
//     api or create webhook outside a project wraps ErrNotProject, an API
//     the project has wraps ErrAPIExists, a hook (defaulting, validation,
//     conversion) a kind has wraps ErrWebhookExists, init in a directory
//     holding more than .git wraps ErrDirNotEmpty.
//   - Every file is rendered in memory first (Go files gofmt-formatted, or
//     the render fails), then written.
//   - All or nothing: if a write, go mod tidy (init, create api, create
//     webhook) or make manifests (create api, create webhook) fails, the directory is put back as it was:
//     files created are removed, files changed are restored, and a
//     directory init made is removed. .git and bin/ (build output) are left
//     alone. The error carries the failed command's output.
//   - Owned and yours: a generated file's first line says "Code generated
//     by opkit ...; DO NOT EDIT." (opkit.mk, PROJECT, hack/tools, the config/
//     bases: a later opkit may rewrite them) or "Scaffolded by opkit; yours
//     to edit." (Makefile, cmd/, api/, internal/controller/, samples). go.mod
//     and controller-gen's output carry no header. The project's README
//     lists which is which.
//   - create api adds lines to files the user owns only at the markers
//     "+opkit:scaffold:imports", "scheme" and "controllers" (cmd/main.go),
//     "kinds" (api/<version>/groupversion_info.go), "samples" and "crds"
//     (the kustomizations; "rbac" for each kind's admin, editor and viewer roles),
//     and each line once (compared word by word, as
//     gofmt realigns), so that calls compose; and, for a kind's second
//     version, +kubebuilder:storageversion above the first version's type
//     when no version has it. create webhook adds at
//     "webhooks", "flags", "flagset", "manager-options" and "start"
//     (cmd/main.go), "flag-defaults" (cmd/main_test.go), "webhook-targets"
//     (cmd/webhook.go), "hooks", "setup" and "imports"
//     (internal/webhook/<version>/<kind>_webhook.go),
//     "imports", "scheme", "webhooks" and "convert-crds" (every webhook
//     package's main_test.go), "imports", "scheme", "convert-crds" and
//     "conversions" (internal/controller/main_test.go, for a conversion),
//     "rbac" and "crdpatches" (the kustomizations).
//   - Webhooks: a project serves none until create webhook adds the first,
//     with cmd/webhook.go (flags --webhook-port, default 9443 and 0 for
//     off, --webhook-cert-dir, --webhook-certs=self-managed|mounted;
//     --local serves none), config/webhook and its wiring, and
//     certificates the operator manages itself (pkg/webhook/certs). Each
//     hook is a file of its own (<kind>_defaulter.go, <kind>_validator.go
//     and their tests), so that hooks added later compose. The tests of
//     every webhook package serve every webhook of the project, and --local
//     serves them to its control plane. Nothing generated but the types
//     and a spoke's ConvertTo and ConvertFrom names a field of the spec,
//     so that the examples and tests compile whatever the user makes of
//     the type. With
//     RequesterCheck (--requester-check, which needs --validation) the
//     Validator holds a requester.Checker (package webhook/requester) that
//     the kind's setup makes from the manager's client, calls it on create
//     and update with the permissions the object asks the operator to use
//     for its requester (an example: get on the Secret an annotation names),
//     asks for create on subjectaccessreviews (an RBAC marker), and is
//     tested with an impersonated user and real RBAC; without it, the
//     Validator's doc points to the flag and opkit's docs/security.md.
//   - Versions: a project never serves two versions of a kind that do not
//     convert through a webhook (the API server's strategy None changes
//     apiVersion alone, dropping every field the versions name
//     differently). create api marks a kind's version added before its
//     versions convert +kubebuilder:unservedversion, keeps the first
//     version stored, names its sample <kind>-<version>-sample, and prints
//     the create webhook --conversion to run and the files it writes.
//     Conversion makes the given version the hub, every other a served
//     spoke whose ConvertTo and ConvertFrom copy the fields named alike
//     (copyJSONFields), serves the conversion in cmd/main.go, in both test
//     packages and to --local's control plane, and tests a round trip of
//     every sample through every served version against the API server.
//     A version create api adds to a kind that converts is a served spoke
//     at once.
//   - Upgrades: init, create api and create webhook record in .opkit/base
//     what the templates make of PROJECT (replayed: init, each API in
//     order, then each API's webhooks) and in .opkit/version whose
//     templates they are; create api and create webhook refuse a project
//     another opkit's templates made (ErrUpgradeFirst). Upgrade renders
//     the project again with this opkit's templates and rewrites the files
//     the user left as recorded, leaves those whose template did not
//     change, three-way merges the rest with git merge-file (else writes
//     <file>.opkit-new beside them), and wraps ErrConflict when a file
//     needs the user's hand. It reads only files with opkit's header.
//   - The PROJECT file (YAML) records the layout, domain, module, name and
//     every API with its webhooks (kubebuilder's "webhooks: {defaulting,
//     validation, conversion, webhookVersion}"); create api and create
//     webhook find the project by it.
//   - A project runs controller-gen and staticcheck with go tool from
//     hack/tools/go.mod, and promtool with go run from hack/tools/promtool,
//     copies of opkit's own (a test fails when they differ): go tool and go
//     run cache what they link, so one binary in Go's build cache serves
//     every project on the machine. It builds its local control plane and
//     kubectl with "opkit envtest", and its image with opkit's hack/image,
//     at the opkit version go.mod requires (tool directives). config/prometheus holds
//     opkit's config/monitoring rules and dashboard, copied likewise.
//   - Layout: one API group per version (api/<version>/), one controller
//     package (internal/controller/) whose tests share one control plane,
//     one webhook package per version (internal/webhook/<version>/) whose
//     tests share another, which calls the webhooks as a cluster would.
package scaffold
