package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// e2eImage is the IMG the end-to-end test builds and deploys.
const e2eImage = "registry.example:5000/acme/acme-operator:v0.1.0"

// testImage runs the project's make image and reads the tarball as docker
// load would: manifest.json names the tag, the config and the layers; the
// config runs /manager as 65532:65532; the last layer holds /manager, a
// static binary.
func testImage(t *testing.T, dir string) {
	shell(t, dir, "make", "image", "IMG="+e2eImage)
	tarball := filepath.Join(dir, "bin", "image", "acme-operator.tar")
	files := readTar(t, tarball)
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatalf("%s has no docker manifest.json: %v", tarball, err)
	}
	if len(manifest) != 1 || !slices.Equal(manifest[0].RepoTags, []string{e2eImage}) || len(manifest[0].Layers) == 0 {
		t.Fatalf("manifest.json = %+v, want one image tagged %s", manifest, e2eImage)
	}
	var config struct {
		Architecture string `json:"architecture"`
		Config       struct {
			User       string
			Entrypoint []string
		} `json:"config"`
	}
	if err := json.Unmarshal(files[manifest[0].Config], &config); err != nil {
		t.Fatalf("read the image config %s: %v", manifest[0].Config, err)
	}
	if config.Config.User != "65532:65532" || !slices.Equal(config.Config.Entrypoint, []string{"/manager"}) {
		t.Errorf("the image runs %q as %q, want /manager as 65532:65532 (config/manager's command and user)", config.Config.Entrypoint, config.Config.User)
	}
	layer := files[manifest[0].Layers[len(manifest[0].Layers)-1]]
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	bin, ok := readTarFrom(t, zr)["manager"]
	if !ok {
		t.Fatal("the image's last layer holds no /manager")
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("/manager is not an ELF binary: %v", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("/manager is dynamically linked (program header %v): built without CGO_ENABLED=0?", p.Type)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bin", "image", "oci", "index.json")); err != nil {
		t.Errorf("make image wrote no OCI layout: %v", err)
	}
}

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return readTarFrom(t, f)
}

func readTarFrom(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = b
	}
}

// testBuildInstaller runs make build-installer and checks dist/install.yaml:
// the Deployment runs IMG, and each kind of the project's own has an editor
// and a viewer role, aggregated into the built-in ones.
func testBuildInstaller(t *testing.T, dir string) {
	shell(t, dir, "make", "build-installer", "IMG="+e2eImage)
	b, err := os.ReadFile(filepath.Join(dir, "dist", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := parseObjects(t, b)
	if got := managerImage(t, objs); got != e2eImage {
		t.Errorf("dist/install.yaml's Deployment runs %s, want IMG %s", got, e2eImage)
	}
	checkRoles(t, objs)
}

// parseObjects returns the objects of a multi-document YAML stream by
// kind/name.
func parseObjects(t *testing.T, b []byte) map[string]*unstructured.Unstructured {
	t.Helper()
	objs := map[string]*unstructured.Unstructured{}
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &o.Object); err != nil {
			t.Fatal(err)
		}
		objs[o.GetKind()+"/"+o.GetName()] = o
	}
	return objs
}

func managerImage(t *testing.T, objs map[string]*unstructured.Unstructured) string {
	t.Helper()
	d, ok := objs["Deployment/acme-operator-controller-manager"]
	if !ok {
		t.Fatal("no Deployment acme-operator-controller-manager")
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	image, _, _ := unstructured.NestedString(containers[0].(map[string]any), "image")
	return image
}

// checkRoles checks the editor and viewer ClusterRoles of Frigate and
// Admiral.
func checkRoles(t *testing.T, objs map[string]*unstructured.Unstructured) {
	t.Helper()
	for _, kind := range []string{"frigate", "admiral"} {
		for role, label := range map[string]string{"editor": "aggregate-to-edit", "viewer": "aggregate-to-view"} {
			key := "ClusterRole/acme-operator-" + kind + "-" + role + "-role"
			o, ok := objs[key]
			if !ok {
				t.Errorf("no %s", key)
				continue
			}
			if o.GetLabels()["rbac.authorization.k8s.io/"+label] != "true" {
				t.Errorf("%s is not labelled %s: %v", key, label, o.GetLabels())
			}
		}
	}
}

// testDeploy runs make install, then make deploy, against a control plane
// of its own, and finds what they applied; then make uninstall. make
// undeploy is left out: the control plane has no namespace controller, so
// the namespace it deletes would stay Terminating and kubectl wait on it.
func testDeploy(t *testing.T, dir string) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	shell(t, dir, "make", "install")
	if _, err := crds.Get(t.Context(), "frigates.ship.acme.example", metav1.GetOptions{}); err != nil {
		t.Errorf("after make install: %v", err)
	}
	shell(t, dir, "make", "deploy", "IMG="+e2eImage)
	d, err := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("acme-operator-system").
		Get(t.Context(), "acme-operator-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after make deploy: %v", err)
	}
	if got := managerImage(t, map[string]*unstructured.Unstructured{"Deployment/acme-operator-controller-manager": d}); got != e2eImage {
		t.Errorf("make deploy's Deployment runs %s, want %s", got, e2eImage)
	}
	roles := dyn.Resource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"})
	if _, err := roles.Get(t.Context(), "acme-operator-frigate-editor-role", metav1.GetOptions{}); err != nil {
		t.Errorf("after make deploy: %v", err)
	}
	shell(t, dir, "make", "uninstall")
	if _, err := crds.Get(t.Context(), "frigates.ship.acme.example", metav1.GetOptions{}); err == nil {
		t.Error("make uninstall left the Frigate CRD")
	}
}

// testPrometheus renders config/default with config/prometheus, its
// commented-out component, turned on, and runs make test-alerts.
func testPrometheus(t *testing.T, dir string) {
	kubectl := kubectlPath(t)
	config := filepath.Join(t.TempDir(), "config")
	if out, err := exec.CommandContext(t.Context(), "cp", "-r", filepath.Join(dir, "config"), config).CombinedOutput(); err != nil {
		t.Fatalf("copy config: %v\n%s", err, out)
	}
	path := filepath.Join(config, "default", "kustomization.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	on := strings.Replace(string(b), "#components:\n#- ../prometheus\n", "components:\n- ../prometheus\n", 1)
	if on == string(b) {
		t.Fatal("config/default/kustomization.yaml has no commented-out config/prometheus component")
	}
	if err := os.WriteFile(path, []byte(on), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), kubectl, "kustomize", filepath.Join(config, "default")).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kubectl kustomize config/default with config/prometheus: %v\n%s", err, stderr)
	}
	objs := parseObjects(t, out)
	for _, key := range []string{"ServiceMonitor/acme-operator-controller-manager-metrics-monitor", "PrometheusRule/acme-operator-opkit-alerts", "ConfigMap/acme-operator-dashboard"} {
		if o, ok := objs[key]; !ok || o.GetNamespace() != "acme-operator-system" {
			t.Errorf("config/default with config/prometheus renders no %s in acme-operator-system", key)
		}
	}
	shell(t, dir, "make", "test-alerts")
}
