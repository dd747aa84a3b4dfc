package logging_test

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"

	"github.com/opkit-dev/opkit/internal/logging"
)

type buffer struct{ strings.Builder }

func TestOr(t *testing.T) {
	state := klog.CaptureState()
	defer state.Restore()
	var out buffer
	klog.LogToStderr(false)
	klog.SetOutput(&out)

	logging.Or(logr.Logger{}).Info("Printed")
	var own buffer
	logging.Or(funcr.New(func(_, args string) { own.WriteString(args) }, funcr.Options{})).Info("Own")
	klog.Flush()
	if !strings.Contains(out.String(), "Printed") {
		t.Errorf("the zero Logger's default did not print through klog: %q", out.String())
	}
	if strings.Contains(out.String(), "Own") || !strings.Contains(own.String(), "Own") {
		t.Errorf("a logger of the caller's was replaced: klog has %q, it has %q", out.String(), own.String())
	}
}
