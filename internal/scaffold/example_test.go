package scaffold_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/opkit-dev/opkit/internal/scaffold"
)

// A refused input names the flag and says what is allowed; nothing is
// written.
func ExampleInputError() {
	dir, err := os.MkdirTemp("", "acme")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	err = scaffold.Init(context.Background(), dir, scaffold.InitOptions{
		Module: "example.com/acme-operator", Domain: "Acme_Example", OpkitVersion: "v0.1.0",
	})
	var ie *scaffold.InputError
	if errors.As(err, &ie) {
		fmt.Println(ie.Input, ie.Value)
	}
	entries, _ := os.ReadDir(dir)
	fmt.Println(len(entries), "files written")
	// Output:
	// --domain Acme_Example
	// 0 files written
}

func ExampleCreateAPI_notAProject() {
	dir, err := os.MkdirTemp("", "acme")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	err = scaffold.CreateAPI(context.Background(), dir, scaffold.APIOptions{
		Group: "ship", Version: "v1", Kind: "Frigate", Namespaced: true, Resource: true, Controller: true,
	})
	fmt.Println(errors.Is(err, scaffold.ErrNotProject))
	// Output: true
}
