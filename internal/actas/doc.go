// Package actas sends a client's requests as another user: client-go's
// impersonation, chosen per request rather than per client, so that an
// operator acting for many tenants keeps one HTTP client, one connection
// pool and one REST mapping however many identities it acts as.
//
//   - Transport wraps the manager's transport; a request whose context
//     carries a user (WithUser) goes out with client-go's impersonation
//     headers for that user; any other request goes out as it came.
//   - Client wraps a controller-runtime client so that each of its calls,
//     those of its Status() and SubResource() included, carries one user:
//     a value of a few words, made per call, that holds nothing once the
//     call returns, so acting as a thousand identities costs nothing
//     between calls.
//   - The API server decides: it checks the operator's right to
//     impersonate the user (verb impersonate, on users, groups or
//     serviceaccounts), then authorizes the request as that user. Nothing
//     here grants or checks a permission.
package actas
