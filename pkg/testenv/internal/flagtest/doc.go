// Package flagtest holds a test only: a test package that, like
// well-known sample controllers, registers -kubeconfig on the global flag
// set as it is initialised, and imports pkg/testenv. If importing testenv
// registered -kubeconfig too, the test binary would panic with
// "flag redefined: kubeconfig" before any test ran.
package flagtest
