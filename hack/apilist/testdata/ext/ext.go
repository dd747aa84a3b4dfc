// Package ext is a package of another module, whose types the listing
// qualifies by import path.
package ext

type Config struct{}
