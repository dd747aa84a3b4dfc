// Package certs gives a webhook server certificates that take care of
// themselves, in a cluster without cert-manager: a self-signed CA kept in a
// Secret, a serving certificate renewed before it expires, and the caBundle
// of the operator's webhook configurations and CRD conversion webhooks kept
// equal to the CA. A Rotator does it all; it imports nothing of opkit's
// manager or webhook packages, which use it.
//
//   - One CA for every replica, in Options.CASecret, created when missing;
//     replicas that race agree on one CA.
//   - Never untrusted: a CA is replaced two thirds into its life, and the
//     bundle (BundleKey) keeps the earlier CAs still valid; each sync sets
//     the caBundles before it writes a certificate the new CA signed.
//   - The serving certificate names <service>.<namespace>.svc,
//     <service>.<namespace>.svc.cluster.local and Options.Hosts; it is
//     renewed two thirds into its life, or at once when the CA or the
//     names change. Each replica makes its own; its key never leaves the
//     pod.
//   - Written atomically to Options.CertDir as CertFile and KeyFile: a
//     reader never sees a partly written pair, and controller-runtime's
//     webhook server serves the new one without a restart.
//   - Only caBundle fields are written, by patch, in the Targets: never
//     the whole object, which would undo other writers' changes.
//   - Repaired within Options.ResyncInterval: a caBundle someone reset, or
//     a CA another replica rotated.
//   - Start runs on every replica, leader or not, and never fails on a
//     failed sync: it logs it and retries. Ready and Check fail with
//     ErrNotReady until a sync succeeded, or once the certificate expired;
//     WaitReady waits for the first sync.
//   - All validity and scheduling goes through Options.Clock.
//
// # Permissions
//
// The operator's service account needs, in a Role in the CA Secret's
// namespace, create on secrets, and get and update on secrets restricted by
// resourceNames to the CA Secret (create cannot be restricted by name); in
// a ClusterRole, get and patch on validatingwebhookconfigurations,
// mutatingwebhookconfigurations and customresourcedefinitions, each
// restricted by resourceNames to the Targets.
//
// # Compared with cert-manager
//
// Choose cert-manager when the cluster runs it already: it rotates without
// the operator's help, one serving certificate serves every replica, and
// the CA key sits outside the operator's namespace. Choose this package
// when it does not (cert-manager is three deployments and cluster-wide
// CRDs to install and upgrade), or for a self-contained operator. What
// differs:
//
//   - Here the CA key is in a Secret in the operator's namespace: whoever
//     can read Secrets there can mint certificates the API server accepts
//     for these webhooks (and for nothing else).
//   - Rotation happens only while the operator runs; an operator stopped
//     past its certificate's expiry renews it at the next start, before
//     its webhook server is ready.
//   - A renewed Secret reaches a pod that mounts it at the kubelet's next
//     sync of the volume, which can take a minute or more; here the new
//     file is there when Sync returns.
//   - The CertDir must be writable: an emptyDir when the root filesystem
//     is read-only.
//
// open-policy-agent/cert-controller, used by Gatekeeper, works much the
// same way, but keeps the serving certificate in the Secret, so replicas
// share one, and reconciles the targets on watch events.
package certs
