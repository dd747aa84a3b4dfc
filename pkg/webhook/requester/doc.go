// Package requester checks that the user behind an admission request may
// do what the request asks the operator to do on their behalf, so that an
// operator never becomes a confused deputy: one that writes, with its own
// ServiceAccount, where its users could not, or reads for them what they
// could not read.
//
// An operator acts with its own permissions on objects its users name: a
// Mirror names a Secret to copy and the namespaces to copy it into, a
// backup names a volume, a gateway a certificate. A Validator of package
// webhook calls Checker.Check with the permissions the object implies
// (get the source; create in each target namespace), and the request is
// refused unless the requester holds every one of them.
//
// Its contract:
//
//   - The requester is the AdmissionRequest's userInfo (name, uid, groups,
//     extra), asked about with a SubjectAccessReview per permission, as
//     'kubectl auth can-i --as' asks. Nothing is assumed from the
//     operator's own permissions.
//   - Denied: a *DeniedError naming the user, the object of the request
//     and every missing permission ('user "alice" may not get secrets
//     "ops-only" in namespace "team-a", ...'); it is a 403 Forbidden API
//     status, so kubectl prints it as the webhook's denial.
//   - Bounded: answers are cached by a hash of (user, permission) for
//     Options.TTL (10s), at most Options.CacheSize (4096) of them; one
//     Check asks at most Options.MaxPermissions (256) distinct
//     permissions, 8 at a time, and refuses a request that needs more.
//   - Fails closed: a SubjectAccessReview that fails (the API server
//     unreachable, the operator lacking create on subjectaccessreviews) is
//     an error, which refuses the request; it is not cached.
//   - Only as good as the webhook server's caller authentication: anyone
//     who can reach the webhook port can send an AdmissionReview naming
//     any user. Require the API server's client certificate
//     (docs/security.md says how).
//
// The check holds at admission. What the operator does later for the same
// object (a namespace that opts in afterwards, a permission revoked) is
// the operator's to re-check or to bound by other means; docs/security.md
// describes the threat model of a multi-tenant operator.
package requester
