package container

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/internal/freeport"
)

// serviceAccountDir is where a pod has its ServiceAccount's files, and
// where rest.InClusterConfig reads them.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// runtimeDefaultCaps are the capabilities containerd (and Docker) give a
// container that drops none.
var runtimeDefaultCaps = []string{
	"CAP_AUDIT_WRITE", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_MKNOD",
	"CAP_NET_BIND_SERVICE", "CAP_NET_RAW", "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT",
}

// writeServiceAccount writes the files the kubelet projects into a pod
// (token, ca.crt, namespace), root-owned and world-readable as the
// kubelet's default mode 0644 makes them, and returns their directory.
func writeServiceAccount(t *testing.T, bundle, namespace, token string) string {
	t.Helper()
	dir := filepath.Join(bundle, "serviceaccount")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"token": []byte(token), "ca.crt": env.Config().CAData, "namespace": []byte(namespace)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// command is what the kubelet would run: the container's command, else the
// image's entrypoint, then its args.
func command(c corev1.Container, cf *v1.ConfigFile) []string {
	cmd := c.Command
	if len(cmd) == 0 {
		cmd = cf.Config.Entrypoint
	}
	return append(slices.Clone(cmd), c.Args...)
}

// freeAddr returns a loopback address nothing listens on now, whose port
// no listener on port 0 will be given (internal/freeport).
func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

// containerSpec edits runc's default config.json into the manager
// container of the Deployment pod: its user, read-only root, privileges,
// capabilities, seccomp and limits; the ServiceAccount files; the
// in-cluster environment; and the host's network namespace. id names the
// container and its cgroup.
func containerSpec(t *testing.T, bundle, id string, pod corev1.PodSpec, c corev1.Container, args []string, saDir string) spec {
	t.Helper()
	s, err := defaultSpec(bundle)
	if err != nil {
		t.Fatal(err)
	}
	sc := c.SecurityContext
	if sc == nil || sc.RunAsUser == nil || sc.RunAsGroup == nil {
		t.Fatal("the manager container's securityContext sets no runAsUser and runAsGroup")
	}
	if runAsNonRoot := sc.RunAsNonRoot != nil && *sc.RunAsNonRoot; !runAsNonRoot || *sc.RunAsUser == 0 {
		t.Fatalf("the manager container runs as user %d (runAsNonRoot %v): the kubelet would refuse or run it as root", *sc.RunAsUser, sc.RunAsNonRoot)
	}
	api, err := url.Parse(env.Config().Host)
	if err != nil {
		t.Fatal(err)
	}
	proc := s.obj("process")
	proc["terminal"] = false
	proc["args"] = args
	proc["cwd"] = "/"
	proc["env"] = []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOSTNAME=" + hostname,
		"KUBERNETES_SERVICE_HOST=" + api.Hostname(),
		"KUBERNETES_SERVICE_PORT=" + api.Port(),
	}
	proc["user"] = map[string]any{"uid": *sc.RunAsUser, "gid": *sc.RunAsGroup}
	proc["noNewPrivileges"] = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	caps := capabilities(sc.Capabilities)
	proc["capabilities"] = map[string]any{"bounding": caps, "effective": caps, "permitted": caps}
	s["root"] = map[string]any{"path": "rootfs", "readonly": sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem}
	s["hostname"] = hostname
	s["mounts"] = append(s["mounts"].([]any), map[string]any{
		"destination": serviceAccountDir, "type": "bind", "source": saDir, "options": []string{"rbind", "ro"},
	})
	s["mounts"] = append(s["mounts"].([]any), emptyDirMounts(pod, c)...)
	s.withoutNamespace("network")
	linux := s.obj("linux")
	if seccompRuntimeDefault(pod, c) {
		linux["seccomp"] = seccompProfile()
	}
	// One level, named after the container: runc delete removes it all.
	linux["cgroupsPath"] = "/" + id
	resources := linux["resources"].(map[string]any)
	if mem := c.Resources.Limits.Memory(); !mem.IsZero() {
		resources["memory"] = map[string]any{"limit": mem.Value()}
	}
	if cpu := c.Resources.Limits.Cpu(); !cpu.IsZero() {
		resources["cpu"] = map[string]any{"quota": cpu.MilliValue() * 100, "period": 100000}
	}
	return s
}

// hostname is the container's, as a pod's name would be.
const hostname = "mirror-controller-manager-0"

// capabilities applies a securityContext's drop and add to the runtime's
// default set.
func capabilities(c *corev1.Capabilities) []string {
	caps := slices.Clone(runtimeDefaultCaps)
	if c == nil {
		return caps
	}
	for _, d := range c.Drop {
		if d == "ALL" {
			caps = nil
			break
		}
		caps = slices.DeleteFunc(caps, func(s string) bool { return s == "CAP_"+string(d) })
	}
	for _, a := range c.Add {
		caps = append(caps, "CAP_"+string(a))
	}
	return caps
}

// seccompRuntimeDefault says whether the container asks for the runtime's
// default seccomp profile, its own securityContext overriding the pod's.
func seccompRuntimeDefault(pod corev1.PodSpec, c corev1.Container) bool {
	p := (*corev1.SeccompProfile)(nil)
	if pod.SecurityContext != nil {
		p = pod.SecurityContext.SeccompProfile
	}
	if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		p = c.SecurityContext.SeccompProfile
	}
	return p != nil && p.Type == corev1.SeccompProfileTypeRuntimeDefault
}
