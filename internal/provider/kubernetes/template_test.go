package kubernetes

import (
	"flag"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sloserve/sloserve/internal/provider"
)

var update = flag.Bool("update", false, "rewrite golden files")

const templatePath = "../../../deploy/kustomize/worker-template.yaml"

// TestWorkerTemplate keeps deploy/kustomize/worker-template.yaml equal to the pod the provider
// creates for one sample instance with the default config (run with -update to rewrite it).
func TestWorkerTemplate(t *testing.T) {
	cfg := DefaultConfig()
	pod := cfg.buildPod("unused", provider.Spec{
		Model: "mlp256", Type: "c5.large", Tier: provider.TierVM, MaxBatch: 8, MaxWait: 10 * time.Millisecond,
	}, cfg.Types["c5.large"], time.Time{}, nil, nil)
	delete(pod.Annotations, AnnotationLaunched)
	tmpl := corev1.PodTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PodTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: "sloserve-worker", Namespace: cfg.Namespace},
		Template:   corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec},
	}
	tmpl.Template.Name, tmpl.Template.Namespace = "", ""
	body, err := yaml.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	got := append([]byte("# The worker pod internal/provider/kubernetes creates for one c5.large instance of mlp256\n"+
		"# with its own batching config (max batch 8, max wait 10ms), with the default Config. Generated:\n"+
		"# go test ./internal/provider/kubernetes -run TestWorkerTemplate -update\n"), body...)
	if *update {
		if err := os.WriteFile(templatePath, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s is stale (-want +got):\n- %s\n+ %s\nrun with -update", templatePath, want, got)
	}
}
