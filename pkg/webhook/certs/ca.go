package certs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BundleKey is the key of the CA Secret that holds the CA bundle: the
// current CA first, then earlier CAs that are still valid, so that serving
// certificates the previous CA signed stay trusted while every replica
// moves to the new one.
const BundleKey = "ca.crt"

// authority is the CA as read from, or written to, the CA Secret.
type authority struct {
	ca     *keyPair
	bundle []byte
}

// ensureCA returns the CA from the Secret, creating the Secret when it is
// missing and replacing the CA when it is due. Both writes are optimistic:
// a replica that loses a race (AlreadyExists, Conflict) reads and uses the
// winner's CA, so all replicas agree on one.
func (r *Rotator) ensureCA(ctx context.Context) (*authority, error) {
	secrets := r.client.CoreV1().Secrets(r.opts.CASecret.Namespace)
	for range 3 {
		s, err := secrets.Get(ctx, r.opts.CASecret.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			a, err := r.createCA(ctx)
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return a, err
		}
		if err != nil {
			return nil, fmt.Errorf("get CA Secret %s: %w%s", r.opts.CASecret, err, secretHint(err))
		}
		a, err := authorityFrom(s)
		if err != nil {
			return nil, fmt.Errorf("read CA Secret %s: %w (delete the Secret to have a new CA made)", r.opts.CASecret, err)
		}
		now := r.opts.Clock.Now()
		if now.Before(renewAt(a.ca.cert)) {
			return a, nil
		}
		a, err = r.rotateCA(ctx, s, a, now)
		if apierrors.IsConflict(err) {
			continue
		}
		return a, err
	}
	return nil, fmt.Errorf("update CA Secret %s: it changed under every attempt; will retry", r.opts.CASecret)
}

func (r *Rotator) createCA(ctx context.Context) (*authority, error) {
	a, err := r.newAuthority(r.opts.Clock.Now(), nil)
	if err != nil {
		return nil, err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.opts.CASecret.Namespace, Name: r.opts.CASecret.Name},
		Type:       corev1.SecretTypeTLS,
	}
	a.into(s)
	if _, err := r.client.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create CA Secret %s: %w%s", r.opts.CASecret, err, secretHint(err))
	}
	r.opts.Logger.Info("created CA", "namespace", s.Namespace, "name", s.Name, "notAfter", a.ca.cert.NotAfter)
	return a, nil
}

// rotateCA replaces the CA in s, which the caller read, by a new one,
// keeping the old one in the bundle while it is valid.
func (r *Rotator) rotateCA(ctx context.Context, s *corev1.Secret, old *authority, now time.Time) (*authority, error) {
	a, err := r.newAuthority(now, old)
	if err != nil {
		return nil, err
	}
	s = s.DeepCopy()
	a.into(s)
	if _, err := r.client.CoreV1().Secrets(s.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("rotate CA in Secret %s: %w%s", r.opts.CASecret, err, secretHint(err))
	}
	r.opts.Logger.Info("rotated CA", "namespace", s.Namespace, "name", s.Name, "notAfter", a.ca.cert.NotAfter)
	return a, nil
}

// newAuthority makes a CA whose bundle holds it and the still valid CAs of
// prev's bundle.
func (r *Rotator) newAuthority(now time.Time, prev *authority) (*authority, error) {
	ca, err := newCA(now, r.opts.CALifetime, "opkit-webhook-ca@"+now.UTC().Format(time.RFC3339))
	if err != nil {
		return nil, err
	}
	bundle := bytes.Clone(ca.certPEM)
	if prev != nil {
		old, err := parseCerts(prev.bundle)
		if err != nil {
			return nil, err
		}
		for _, c := range old {
			if now.Before(c.NotAfter) {
				bundle = append(bundle, encodeCert(c)...)
			}
		}
	}
	return &authority{ca: ca, bundle: bundle}, nil
}

func (a *authority) into(s *corev1.Secret) {
	s.Data = map[string][]byte{
		corev1.TLSCertKey:       a.ca.certPEM,
		corev1.TLSPrivateKeyKey: a.ca.keyPEM,
		BundleKey:               a.bundle,
	}
}

func authorityFrom(s *corev1.Secret) (*authority, error) {
	ca, err := parseKeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, err
	}
	if !ca.cert.IsCA {
		return nil, errors.New("the certificate in tls.crt is not a CA")
	}
	bundle := s.Data[BundleKey]
	if len(bundle) == 0 {
		bundle = ca.certPEM
	}
	return &authority{ca: ca, bundle: bundle}, nil
}

func secretHint(err error) string {
	if apierrors.IsForbidden(err) {
		return " (grant get, create and update on secrets in its namespace to the operator's service account)"
	}
	return ""
}
