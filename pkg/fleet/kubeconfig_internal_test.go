package fleet

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfig returns a kubeconfig of one context, "member", after edit
// changes its cluster and user.
func kubeconfig(t *testing.T, edit func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cluster := &clientcmdapi.Cluster{Server: "https://member.example:6443", CertificateAuthorityData: []byte("ca")}
	user := &clientcmdapi.AuthInfo{Token: "secret-token"}
	if edit != nil {
		edit(cluster, user)
	}
	cfg.Clusters["c"] = cluster
	cfg.AuthInfos["u"] = user
	cfg.Contexts["member"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "member"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A member's kubeconfig is taken only with inline credentials: one that
// would read a file of the operator's, or run something, is refused with
// what to do instead.
func TestMemberConfigRefusesFilesAndCommands(t *testing.T) {
	refused := []struct {
		name string
		edit func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
		want string
	}{
		{"exec", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", APIVersion: "client.authentication.k8s.io/v1"}
		}, "exec"},
		{"auth provider", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"}
		}, "auth provider"},
		{"the operator's own token", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.TokenFile = "", "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}, "tokenFile"},
		{"client certificate file", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.ClientCertificate = "/etc/ssl/private/cert.pem"
		}, "client-certificate"},
		{"client key file", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.ClientKey = "/etc/ssl/private/key.pem"
		}, "client-key"},
		{"CA file", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.CertificateAuthorityData, c.CertificateAuthority = nil, "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
		}, "certificate-authority"},
		{"no server", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.Server = "" }, "no server"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := memberConfig(kubeconfig(t, tc.edit))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("memberConfig: %v, want a refusal naming %q", err, tc.want)
			}
		})
	}
	for name, data := range map[string][]byte{"empty": nil, "not YAML": []byte("{{"), "no current context": []byte("apiVersion: v1\nkind: Config\n")} {
		if _, err := memberConfig(data); err == nil {
			t.Errorf("memberConfig of a kubeconfig %s: no error", name)
		}
	}
}

// A file named by a context other than the current one is never read
// either: only the current context's entries are taken.
func TestMemberConfigTakesTheCurrentContextOnly(t *testing.T) {
	cfg, err := clientcmd.Load(kubeconfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	cfg.AuthInfos["other"] = &clientcmdapi.AuthInfo{TokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}
	cfg.Contexts["other"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "other"}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := memberConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://member.example:6443" || rc.BearerToken != "secret-token" || rc.BearerTokenFile != "" {
		t.Errorf("config: host %q, token %q, token file %q; want the current context's, inline", rc.Host, rc.BearerToken, rc.BearerTokenFile)
	}
}
