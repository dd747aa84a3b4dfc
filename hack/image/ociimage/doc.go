// Package ociimage builds an operator's container image from Go alone: no
// Docker engine, no base image to download. hack/image (make image) and the
// container test in test/container build the sample operator's image with
// it, so the image the test runs is the image a user ships; a project opkit
// scaffolded builds its own operator's with it (its make image, through
// hack/image as a go tool).
//
//   - The image has two layers: a base that this package assembles
//     (rootfs/: /etc/passwd and /etc/group naming root and the non-root user
//     65532, "nonroot"; and the Mozilla roots as a PEM bundle at CABundle,
//     /etc/ssl/certs/ca-certificates.crt, from the pinned module
//     golang.org/x/crypto/x509roots/fallback, so that an operator trusts
//     what a TLS server outside the cluster presents), then the operator's
//     binary at Options.Entrypoint (the sample's: /sample-operator).
//     There is no shell and no package manager, nothing but those four
//     files and their directories.
//   - The binary is static (CGO_ENABLED=0) and built with GoBuildFlags, the
//     flags the Dockerfile uses: -tags nolocal leaves the test control plane
//     out of the deployed build.
//   - The config runs the entrypoint as User 65532:65532, numeric so that a
//     Pod's runAsNonRoot can check it without reading /etc/passwd.
//   - Reproducible: every timestamp (files, history, config) is
//     Options.Created, and layers are written in a fixed order, so the same
//     binary gives the same digest.
//   - Write writes an OCI image layout directory and a docker-compatible
//     tarball (docker load, kind load image-archive, ctr import); Push
//     pushes with the credentials docker login stored.
//
// The Dockerfile at the module root builds the same content (the same
// build flags, rootfs/ files, CA bundle path, user, entrypoint and labels;
// its bundle is the golang image's Debian one) for people with
// Docker; TestDockerfileMatches keeps the two in step.
package ociimage
