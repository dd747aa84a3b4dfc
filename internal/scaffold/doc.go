// Package scaffold makes operator projects: what "opkit init" and "opkit
// create api" write, kubebuilder's layout with opkit's libraries.
//
// Its contract:
//
//   - Inputs are checked before anything is written. A refused input is an
//     *InputError naming the flag, the value and what is allowed; create
//     api outside a project wraps ErrNotProject, an API the project has
//     wraps ErrAPIExists, init in a directory holding more than .git wraps
//     ErrDirNotEmpty.
//   - Every file is rendered in memory first (Go files gofmt-formatted, or
//     the render fails), then written.
//   - All or nothing: if a write, go mod tidy (init, create api) or make
//     manifests (create api) fails, the directory is put back as it was:
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
//     (the kustomizations), and each line once, so that calls compose.
//   - The PROJECT file (YAML) records the layout, domain, module, name and
//     every API; create api finds the project by it.
//   - A project builds controller-gen and staticcheck from hack/tools/go.mod,
//     a copy of opkit's own (a test fails when they differ), and its local
//     control plane with "opkit envtest" at the opkit version go.mod
//     requires (a tool directive).
//   - Layout: one API group per version (api/<version>/), one controller
//     package (internal/controller/) whose tests share one control plane.
package scaffold
