// Package plane starts and stops kube-apiserver and etcd as child
// processes, with certificates of its own and an admin client certificate.
//
// It does what controller-runtime's envtest control plane does, without
// importing envtest: envtest imports controller-runtime's pkg/client/config,
// whose init registers -kubeconfig on the global flag set, and a test binary
// whose own code registers -kubeconfig (as well-known controllers do) then
// panics with "flag redefined: kubeconfig" before TestMain runs. Nothing in
// this package touches the global flag set.
package plane
