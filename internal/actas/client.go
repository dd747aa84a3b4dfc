package actas

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// Client returns c with every call made as user: c must send its requests
// through Transport. The returned client holds user and c, nothing else;
// it is safe for concurrent use as c is.
func Client(c crclient.Client, user rest.ImpersonationConfig) crclient.Client {
	return &client{Client: c, user: &user}
}

// client sends each call of Client as user.
type client struct {
	crclient.Client
	user *rest.ImpersonationConfig
}

var _ crclient.Client = (*client)(nil)

func (c *client) as(ctx context.Context) context.Context { return WithUser(ctx, c.user) }

func (c *client) Get(ctx context.Context, key crclient.ObjectKey, obj crclient.Object, opts ...crclient.GetOption) error {
	return c.Client.Get(c.as(ctx), key, obj, opts...)
}

func (c *client) List(ctx context.Context, list crclient.ObjectList, opts ...crclient.ListOption) error {
	return c.Client.List(c.as(ctx), list, opts...)
}

func (c *client) Create(ctx context.Context, obj crclient.Object, opts ...crclient.CreateOption) error {
	return c.Client.Create(c.as(ctx), obj, opts...)
}

func (c *client) Delete(ctx context.Context, obj crclient.Object, opts ...crclient.DeleteOption) error {
	return c.Client.Delete(c.as(ctx), obj, opts...)
}

func (c *client) Update(ctx context.Context, obj crclient.Object, opts ...crclient.UpdateOption) error {
	return c.Client.Update(c.as(ctx), obj, opts...)
}

func (c *client) Patch(ctx context.Context, obj crclient.Object, patch crclient.Patch, opts ...crclient.PatchOption) error {
	return c.Client.Patch(c.as(ctx), obj, patch, opts...)
}

func (c *client) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...crclient.ApplyOption) error {
	return c.Client.Apply(c.as(ctx), obj, opts...)
}

func (c *client) DeleteAllOf(ctx context.Context, obj crclient.Object, opts ...crclient.DeleteAllOfOption) error {
	return c.Client.DeleteAllOf(c.as(ctx), obj, opts...)
}

func (c *client) Status() crclient.SubResourceWriter {
	return subResourceWriter{w: c.Client.Status(), user: c.user}
}

func (c *client) SubResource(name string) crclient.SubResourceClient {
	sub := c.Client.SubResource(name)
	return subResourceClient{subResourceWriter: subResourceWriter{w: sub, user: c.user}, r: sub}
}

// subResourceWriter sends each write of w as user.
type subResourceWriter struct {
	w    crclient.SubResourceWriter
	user *rest.ImpersonationConfig
}

func (s subResourceWriter) as(ctx context.Context) context.Context { return WithUser(ctx, s.user) }

func (s subResourceWriter) Create(ctx context.Context, obj, sub crclient.Object, opts ...crclient.SubResourceCreateOption) error {
	return s.w.Create(s.as(ctx), obj, sub, opts...)
}

func (s subResourceWriter) Update(ctx context.Context, obj crclient.Object, opts ...crclient.SubResourceUpdateOption) error {
	return s.w.Update(s.as(ctx), obj, opts...)
}

func (s subResourceWriter) Patch(ctx context.Context, obj crclient.Object, patch crclient.Patch, opts ...crclient.SubResourcePatchOption) error {
	return s.w.Patch(s.as(ctx), obj, patch, opts...)
}

func (s subResourceWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...crclient.SubResourceApplyOption) error {
	return s.w.Apply(s.as(ctx), obj, opts...)
}

// subResourceClient sends each call of a subresource client as user.
type subResourceClient struct {
	subResourceWriter
	r crclient.SubResourceReader
}

func (s subResourceClient) Get(ctx context.Context, obj, sub crclient.Object, opts ...crclient.SubResourceGetOption) error {
	return s.r.Get(s.as(ctx), obj, sub, opts...)
}
