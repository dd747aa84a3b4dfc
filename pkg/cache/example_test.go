package cache_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// Registering types and reading an unregistered one need no cluster: the
// cache talks to the API server only once started.
func Example() {
	c, err := cache.New(&rest.Config{Host: "https://127.0.0.1:1"}, cache.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	pods, err := cache.For[*corev1.Pod](c, cache.TypeOptions{Namespaces: []string{"default"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("caching", pods.GroupVersionKind().Kind)

	_, err = cache.Lookup[*corev1.Secret](c)
	fmt.Println(errors.Is(err, cache.ErrNotRegistered))
	// Output:
	// caching Pod
	// true
}

// A reconciler's-eye view: register, start, wait for sync, read.
func ExampleLister_Get() {
	var cfg *rest.Config // from the manager, clientcmd or rest.InClusterConfig
	c, err := cache.New(cfg, cache.Options{})
	if err != nil {
		panic(err)
	}
	pods, err := cache.For[*corev1.Pod](c, cache.TypeOptions{})
	if err != nil {
		panic(err)
	}
	byNode := func(p *corev1.Pod) []string { return []string{p.Spec.NodeName} }
	if err := pods.AddIndex("node", byNode); err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		panic(err)
	}
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.WaitForSync(syncCtx); err != nil {
		panic(err) // names every type not synced, and why
	}

	pod, err := pods.Get("default", "web-0")
	if err != nil {
		panic(err) // apierrors.IsNotFound(err) when there is none
	}
	// pod is the cached object: copy before changing it.
	pod = pod.DeepCopy()
	pod.Labels["seen"] = "true"

	onNode, _ := pods.ByIndex("node", "node-1")
	fmt.Println(len(onNode))
}
