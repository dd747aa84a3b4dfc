// Package requester checks that the user behind an admission request may
// do what the request asks the operator to do on their behalf, so that an
// operator never becomes a confused deputy: one that writes, with its own
// ServiceAccount, where its users could not, or reads for them what they
// could not read. A Validator of package webhook calls Checker.Check with
// the permissions the object implies (get the Secret it names; create in
// each target namespace), and the request is refused unless the requester
// holds every one.
//
// Its contract:
//
//   - The requester is the AdmissionRequest's userInfo, asked about with a
//     SubjectAccessReview per permission, as 'kubectl auth can-i --as'
//     asks. Nothing is assumed from the operator's own permissions.
//   - Denied: a *DeniedError naming the user, the object of the request
//     and every missing permission; a 403 Forbidden that kubectl prints as
//     the webhook's denial.
//   - Bounded: answers are cached for Options.TTL, at most
//     Options.CacheSize of them; one Check asks at most
//     Options.MaxPermissions distinct permissions.
//   - Fails closed: a SubjectAccessReview that fails is an error, which
//     refuses the request; it is not cached.
//   - Only as good as the webhook server's caller authentication: require
//     the API server's client certificate (docs/security.md says how).
//   - Checked at admission only: what the operator does later for the same
//     object (a namespace that opts in afterwards, a permission revoked)
//     is the operator's to re-check (docs/security.md).
package requester
