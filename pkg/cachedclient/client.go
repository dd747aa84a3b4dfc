package cachedclient

import (
	"context"

	crclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// New returns a client.Client that reads (Get, List) through reader and
// does everything else (writes, status and other subresources, apply)
// through writer. With a Reader as reader, it is controller-runtime's
// cached client made from opkit's cache; manager.Manager.CachedClient
// returns one.
func New(reader crclient.Reader, writer crclient.Client) crclient.Client {
	return &cached{Client: writer, reader: reader}
}

// cached reads through reader and writes through the embedded Client.
type cached struct {
	crclient.Client
	reader crclient.Reader
}

var _ crclient.Client = (*cached)(nil)

func (c *cached) Get(ctx context.Context, key crclient.ObjectKey, obj crclient.Object, opts ...crclient.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}

func (c *cached) List(ctx context.Context, list crclient.ObjectList, opts ...crclient.ListOption) error {
	return c.reader.List(ctx, list, opts...)
}
