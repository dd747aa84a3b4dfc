// Package certs gives a webhook server certificates that take care of
// themselves, in a cluster without cert-manager: a self-signed CA kept in a
// Secret, a serving certificate renewed before it expires, and the caBundle
// of the operator's webhook configurations and CRD conversion webhooks kept
// equal to the CA. A Rotator does it all; it imports nothing of opkit's
// manager or webhook packages, which use it.
//
//   - The CA lives in Options.CASecret, a kubernetes.io/tls Secret: the CA
//     certificate in tls.crt, its key in tls.key, and in ca.crt (BundleKey)
//     the bundle the API server is told to trust. A Rotator creates the
//     Secret when it is missing. Creating and rotating are optimistic (a
//     create that meets AlreadyExists, an update that meets a Conflict,
//     reads the Secret again and uses what is there), so replicas that race
//     agree on one CA.
//   - A CA is valid for Options.CALifetime (default DefaultCALifetime, ten
//     years) and replaced two thirds into its life. The bundle keeps the
//     earlier CAs that are still valid, so a certificate the old CA signed
//     stays trusted until its replica moves to the new one.
//   - The serving certificate (ECDSA P-256, server auth) names
//     <service>.<namespace>.svc, <service>.<namespace>.svc.cluster.local and
//     Options.Hosts (IP literals become IP SANs). It is valid for
//     Options.CertLifetime (default DefaultCertLifetime, a year), never
//     beyond its CA, and replaced two thirds into its life, or at once when
//     the CA or the names change. Each replica makes its own, with its own
//     key, signed by the shared CA; the key never leaves the pod.
//   - It is written to Options.CertDir (default DefaultCertDir(), where
//     controller-runtime's webhook server looks) as CertFile and KeyFile,
//     which link through a "..data" link to a directory holding the pair, as
//     the kubelet lays out a mounted Secret. A new pair is written to a new
//     directory and swapped in by renaming the link: a reader never sees a
//     partly written file. controller-runtime's certwatcher (which its
//     webhook server uses) reloads on the file events of the swap, so a
//     running server serves the new certificate without a restart.
//   - The caBundle of every webhook in Targets.ValidatingWebhooks and
//     Targets.MutatingWebhooks (a strategic merge patch by webhook name),
//     and of spec.conversion.webhook.clientConfig in each of Targets.CRDs
//     (a JSON merge patch), is set where it differs from the bundle. Only
//     those fields are written: never an update of the whole object, which
//     would undo other writers' changes.
//   - Each sync does, in order: the CA, the caBundles, the serving
//     certificate; so the API server trusts a new CA before any replica
//     serves a certificate it signed.
//
// # Resync, not watch
//
// Start syncs again every Options.ResyncInterval (default
// DefaultResyncInterval, a minute) and whenever a certificate is due. A
// caBundle someone reset (a kubectl apply of the manifests, say) is put back
// at the next resync, as is a CA another replica rotated. A watch would
// repair a reset sooner but would need an informer per kind and list/watch
// permissions; a resync costs one GET per target and one of the Secret a
// minute, and bounds both repairs by the same interval.
//
// # Start, Ready and the clock
//
// Start blocks until its context ends, then returns nil. It runs on every
// replica, leader or not (NeedLeaderElection reports false), since the API
// server calls any of them. A failed sync is logged and retried within five
// seconds; it never ends Start. Ready (and Check, the same as a /readyz
// check) fails with ErrNotReady until a sync succeeded, and when the serving
// certificate has expired; WaitReady blocks until the first sync succeeded,
// for a webhook server that must not start before its certificate is on
// disk. Sync does one sync now. All validity and scheduling goes through
// Options.Clock, so tests run years of rotations in fake time.
//
// # Permissions
//
// The operator's service account needs, in a Role in the CA Secret's
// namespace, create on secrets, and get and update on secrets restricted by
// resourceNames to the CA Secret (create cannot be restricted by name); in
// a ClusterRole, get and patch on validatingwebhookconfigurations,
// mutatingwebhookconfigurations and customresourcedefinitions, each
// restricted by resourceNames to the Targets. TestDocumentedPermissionsSuffice
// checks that these are enough.
//
// # Compared with cert-manager
//
// kubebuilder projects usually get webhook certificates from cert-manager:
// a Certificate and an Issuer make a Secret that the kubelet mounts into the
// pod, and cert-manager's cainjector copies the CA into objects annotated
// with cert-manager.io/inject-ca-from. Choose cert-manager when the cluster
// runs it already: it rotates without the operator's help, one serving
// certificate serves every replica, and the CA key sits outside the
// operator's namespace. Choose this package when it does not (cert-manager
// is three deployments and cluster-wide CRDs to install and upgrade), or
// for a self-contained operator. What differs:
//
//   - Here the CA key is in a Secret in the operator's namespace: whoever can
//     read Secrets there can mint certificates the API server accepts for
//     these webhooks (and for nothing else: the bundle is trusted only in
//     the caBundles it is patched into).
//   - Rotation happens only while the operator runs; an operator stopped
//     past its certificate's expiry renews it at the next start, before its
//     webhook server is ready.
//   - A renewed Secret reaches a pod that mounts it at the kubelet's next
//     sync of the volume, which can take a minute or more; here the new
//     file is there when Sync returns.
//   - The CertDir must be writable: an emptyDir when the root filesystem is
//     read-only.
//
// open-policy-agent/cert-controller, used by Gatekeeper, works much the
// same way; it keeps the serving certificate in the Secret too, so replicas
// share one, and reconciles the targets on watch events instead of
// resyncing them.
package certs
