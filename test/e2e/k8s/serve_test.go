//go:build e2e

package k8s

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/sloserve/sloserve/internal/app"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/controller"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/provider/kubernetes"
)

// errNoProcess is what the gateway's backend answers: KWOK pods run no process.
var errNoProcess = errors.New("KWOK pods run no process")

// kwokBackend stands in for the workers of KWOK pods: it knows each model's metadata (which
// the gateway fetches from the first instance it adds) and answers no inference.
type kwokBackend struct{}

func (kwokBackend) Metadata(_ context.Context, _, model string) (*oip.ModelMetadata, error) {
	return &oip.ModelMetadata{Name: model, Platform: "kwok",
		Inputs:  []oip.TensorMetadata{{Name: "x", Datatype: "FP32", Shape: []int64{-1, 784}}},
		Outputs: []oip.TensorMetadata{{Name: "y", Datatype: "FP32", Shape: []int64{-1, 10}}}}, nil
}

func (kwokBackend) Infer(context.Context, string, string, []*oip.InferenceRequest) ([]*oip.InferenceResponse, error) {
	return nil, errNoProcess
}

// serveConfig is `sloserve serve` with provider kubernetes in ns: mlp256 on three on-demand
// c5.large pods and logreg on two spot ones, the static controller.
func serveConfig(ns string) config.Config {
	cfg := config.Default()
	cfg.Controller.Policy = config.ControllerNone
	cfg.Gateway.Addr = "127.0.0.1:0"
	cfg.Gateway.SyncInterval = 100 * time.Millisecond
	cfg.Controller.SampleInterval = 200 * time.Millisecond
	cfg.Controller.Unit = time.Second
	cfg.Provider.Kind = config.ProviderKubernetes
	k := &cfg.Provider.Kubernetes
	k.Namespace = ns
	k.StartTimeout = readyWithin
	k.StopTimeout = time.Second // KWOK deletes a pod once its grace period is over
	for _, m := range []struct {
		name, typ string
		n         int
	}{{"mlp256", "c5.large", 3}, {"logreg", "c5.large/spot", 2}} {
		mc := config.DefaultModel(m.name)
		mc.Instances = m.n
		mc.InstanceType = config.InstanceType{Name: m.typ, PricePerHour: 0.085, LaunchDelay: 5 * time.Second}
		cfg.Models = append(cfg.Models, mc)
	}
	return cfg
}

// readyPods returns the names of model's pods that the API server shows Ready, sorted, and all
// of its pods.
func readyPods(t *testing.T, ctx context.Context, admin clientset.Interface, ns, model string) (ready []string, all []corev1.Pod) {
	t.Helper()
	for _, pod := range mustPods(t, ctx, admin, ns).Items {
		if pod.Annotations[kubernetes.AnnotationModel] != model {
			continue
		}
		all = append(all, pod)
		if kubernetes.InstanceFromPod(&pod, false).State == provider.StateReady {
			ready = append(ready, pod.Name)
		}
	}
	slices.Sort(ready)
	return ready, all
}

// waitFine is waitFor with a 10 ms poll, for the gateway's own state (no API call): it measures
// how quickly the gateway follows the fleet.
func waitFine(t *testing.T, what string, within time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func gatewayInstances(st *app.Stack, model string) []string {
	ids, _ := st.Gateway.Instances(model)
	slices.Sort(ids)
	return ids
}

// TestServeOnControlPlane runs the serving stack (app.Start, as `sloserve serve` does) with
// provider kubernetes against the real control plane, as the ServiceAccount of
// deploy/kustomize/rbac.yaml: each model's pods are created with its instance type on the right
// pool and turn Ready (KWOK), Start returns with the gateway holding exactly those pods; a pod
// deleted behind its back leaves the gateway, the static controller replaces it and the gateway
// adds the replacement; a restarted stack adopts the running pods. KWOK pods run no process, so
// this checks the fleet, not answers.
func TestServeOnControlPlane(t *testing.T) {
	base := adminConfig(t)
	admin, err := clientset.NewForConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns, sacs := setupNamespace(t, ctx, admin, base)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := serveConfig(ns)
	opts := app.StackOptions{Logger: log, KubernetesClient: sacs, Backend: kwokBackend{}}

	// 1. Start: the pods are created and Ready before Start returns, and the gateway has them.
	start := time.Now()
	st, err := app.Start(ctx, cfg, opts)
	if err != nil {
		t.Fatalf("app.Start with provider kubernetes: %v", err)
	}
	defer func() { st.Close(context.Background()) }()
	up := time.Since(start)
	t.Logf("Start: %d pods ready and in the gateway in %v", 5, up.Round(time.Millisecond))
	if _, ok := st.Provider.(*kubernetes.Provider); !ok {
		t.Fatalf("Stack.Provider is %T, want *kubernetes.Provider", st.Provider)
	}
	for _, m := range cfg.Models {
		ready, all := readyPods(t, ctx, admin, ns, m.Name)
		if len(all) != m.Instances || len(ready) != m.Instances {
			t.Errorf("model %s: %d pods, %d ready; want %d ready", m.Name, len(all), len(ready), m.Instances)
		}
		_, spot := cost.ParseType(m.InstanceType.Name)
		for _, pod := range all {
			if got := pod.Annotations[kubernetes.AnnotationType]; got != m.InstanceType.Name {
				t.Errorf("pod %s type %q, want the model's instance_type %q", pod.Name, got, m.InstanceType.Name)
			}
			n, err := admin.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("node of %s: %v", pod.Name, err)
			}
			if got := n.Labels[kubernetes.LabelCapacity] == kubernetes.CapacitySpot; got != spot {
				t.Errorf("pod %s (%s) on node %s with capacity %q", pod.Name, m.InstanceType.Name, n.Name, n.Labels[kubernetes.LabelCapacity])
			}
		}
		if got := gatewayInstances(st, m.Name); !slices.Equal(got, ready) {
			t.Errorf("model %s: gateway instances %v, want the ready pods %v", m.Name, got, ready)
		}
		// The controller sees the same fleet through the provider.
		want := controller.Count{Type: m.InstanceType.Name, Tier: provider.TierVM, State: provider.StateReady, Count: m.Instances}
		waitFor(t, "the controller's view of "+m.Name, 10*time.Second, func() (bool, error) {
			v, ok := st.Controller.View(m.Name)
			return ok && slices.Equal(v.Counts, []controller.Count{want}), nil
		})
	}
	resp, err := http.Get(st.URL + "/v2/health/ready")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("gateway /v2/health/ready: %d, want 200", resp.StatusCode)
	}

	// 2. A pod deleted behind the gateway's back (kubectl delete pod, a node drain) leaves the
	// gateway as soon as its deletion starts; the static controller launches a replacement, and
	// the gateway adds it once it is Ready.
	before, _ := readyPods(t, ctx, admin, ns, "mlp256")
	victim := before[0]
	start = time.Now()
	if err := admin.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s: %v", victim, err)
	}
	dropped := waitFine(t, "the gateway to drop "+victim, 30*time.Second, func() bool {
		return !slices.Contains(gatewayInstances(st, "mlp256"), victim)
	})
	waitFine(t, "a replacement in the gateway", readyWithin, func() bool {
		ids := gatewayInstances(st, "mlp256")
		return len(ids) == 3 && !slices.Contains(ids, victim)
	})
	back := time.Since(start)
	waitFor(t, "the deleted pod gone and the gateway holding the ready pods", readyWithin, func() (bool, error) {
		ready, all := readyPods(t, ctx, admin, ns, "mlp256")
		for _, p := range all {
			if p.Name == victim {
				return false, nil // still terminating
			}
		}
		return len(ready) == 3 && slices.Equal(gatewayInstances(st, "mlp256"), ready), nil
	})
	after, _ := readyPods(t, ctx, admin, ns, "mlp256")
	t.Logf("deleted pod %s: out of the gateway %v after the delete; a replacement ready and in the gateway %v after (pods %v → %v)",
		victim, dropped.Round(time.Millisecond), back.Round(time.Millisecond), before, after)
	if got := gatewayInstances(st, "logreg"); len(got) != 2 {
		t.Errorf("logreg gateway instances %v after the mlp256 replacement, want its 2 pods", got)
	}

	// 3. Close leaves the pods running; a restarted stack adopts them instead of launching more.
	if _, err := st.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	var want []string
	for _, pod := range mustPods(t, ctx, admin, ns).Items {
		want = append(want, pod.Name)
	}
	slices.Sort(want)
	start = time.Now()
	st, err = app.Start(ctx, cfg, opts)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	restart := time.Since(start)
	var got []string
	for _, pod := range mustPods(t, ctx, admin, ns).Items {
		got = append(got, pod.Name)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("restart changed the pods: %v → %v, want them adopted", want, got)
	}
	var held []string
	for _, m := range cfg.Models {
		held = append(held, gatewayInstances(st, m.Name)...)
	}
	slices.Sort(held)
	if !slices.Equal(held, want) {
		t.Errorf("restarted gateway holds %v, want the adopted pods %v", held, want)
	}
	t.Logf("restart: %d pods adopted, none launched, in %v", len(want), restart.Round(time.Millisecond))
}
