package cache_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	pods, err := cache.Register[*corev1.Pod](c, cache.TypeOptions{Namespaces: []string{"default"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("caching", pods.GroupVersionKind().Kind)
	// Output:
	// caching Pod
}

// A reconciler's-eye view: register, start, wait for sync, read.
func ExampleLister_Get() {
	var cfg *rest.Config // from the manager, clientcmd or rest.InClusterConfig
	c, err := cache.New(cfg, cache.Options{})
	if err != nil {
		panic(err)
	}
	pods, err := cache.Register[*corev1.Pod](c, cache.TypeOptions{})
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

// An index ported from controller-runtime that holds only an owner's name
// finds dependents in every namespace through ByIndex; ByIndexInNamespace
// keeps controller-runtime's scoping.
func ExampleLister_ByIndexInNamespace() {
	var cfg *rest.Config // from the manager, clientcmd or rest.InClusterConfig
	c, err := cache.New(cfg, cache.Options{})
	if err != nil {
		panic(err)
	}
	pods, err := cache.Register[*corev1.Pod](c, cache.TypeOptions{})
	if err != nil {
		panic(err)
	}
	byOwner := func(p *corev1.Pod) []string {
		if o := metav1.GetControllerOf(p); o != nil {
			return []string{o.Name}
		}
		return nil
	}
	if err := pods.AddIndex("owner", byOwner); err != nil {
		panic(err)
	}
	// ... Start and WaitForSync, then in a reconciler of ReplicaSet shop/web:
	mine, _ := pods.ByIndexInNamespace("shop", "owner", "web") // shop's pods of web, sorted by name
	everyWeb, _ := pods.ByIndex("owner", "web")                // every namespace's "web"
	fmt.Println(len(mine) <= len(everyWeb))
}
