package testenv

// SharedEnvironment returns the package's control plane to its external
// tests (package testenv_test), which import packages that import testenv.
func SharedEnvironment() *Environment { return env }
