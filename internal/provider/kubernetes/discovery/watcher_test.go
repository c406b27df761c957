package discovery

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sloserve/sloserve/internal/provider/kubernetes"
)

// recorder collects events as "kind id addr".
type recorder struct {
	mu  sync.Mutex
	evs []string
}

func (r *recorder) emit(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, fmt.Sprintf("%s %s %s", ev.Kind, ev.Instance.ID, ev.Instance.Addr))
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.evs
	r.evs = nil
	return out
}

func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("- %q\n+ %q", want, got)
}

func managed(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns",
			Labels:      map[string]string{kubernetes.LabelManagedBy: kubernetes.ManagedBy},
			Annotations: map[string]string{kubernetes.AnnotationModel: "m", kubernetes.AnnotationType: "c5.large"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Ports: []corev1.ContainerPort{{Name: kubernetes.PortName, ContainerPort: 8000}}}}},
	}
}

func ready(p *corev1.Pod, ip string) *corev1.Pod {
	p = p.DeepCopy()
	p.Status.Phase, p.Status.PodIP = corev1.PodRunning, ip
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

func TestPodWatcher(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seed  []*corev1.Pod
		steps []func(context.Context, *fake.Clientset) error
		want  [][]string // events after the initial sync, then after each step
	}{
		{
			name: "launch ready terminate",
			steps: []func(context.Context, *fake.Clientset) error{
				func(ctx context.Context, cs *fake.Clientset) error {
					_, err := cs.CoreV1().Pods("ns").Create(ctx, managed("a"), metav1.CreateOptions{})
					return err
				},
				func(ctx context.Context, cs *fake.Clientset) error {
					_, err := cs.CoreV1().Pods("ns").Update(ctx, ready(managed("a"), "10.0.0.1"), metav1.UpdateOptions{})
					return err
				},
				func(ctx context.Context, cs *fake.Clientset) error {
					p := ready(managed("a"), "10.0.0.1")
					now := metav1.NewTime(time.Unix(0, 0))
					p.DeletionTimestamp = &now
					_, err := cs.CoreV1().Pods("ns").Update(ctx, p, metav1.UpdateOptions{})
					return err
				},
				func(ctx context.Context, cs *fake.Clientset) error {
					return cs.CoreV1().Pods("ns").Delete(ctx, "a", metav1.DeleteOptions{})
				},
			},
			want: [][]string{nil, nil, {"add a http://10.0.0.1:8000"}, {"drain a http://10.0.0.1:8000"}, {"remove a http://10.0.0.1:8000"}},
		},
		{
			name: "existing ready pods are added at start; abrupt delete drains then removes",
			seed: []*corev1.Pod{ready(managed("a"), "10.0.0.1"), managed("b")},
			steps: []func(context.Context, *fake.Clientset) error{
				func(ctx context.Context, cs *fake.Clientset) error {
					return cs.CoreV1().Pods("ns").Delete(ctx, "a", metav1.DeleteOptions{})
				},
				func(ctx context.Context, cs *fake.Clientset) error {
					return cs.CoreV1().Pods("ns").Delete(ctx, "b", metav1.DeleteOptions{})
				},
			},
			want: [][]string{{"add a http://10.0.0.1:8000"}, {"drain a http://10.0.0.1:8000", "remove a http://10.0.0.1:8000"}, nil},
		},
		{
			name: "interruption notice drains; readiness flap re-adds; new address drains the old one",
			seed: []*corev1.Pod{ready(managed("a"), "10.0.0.1"), ready(managed("c"), "10.0.0.3")},
			steps: []func(context.Context, *fake.Clientset) error{
				func(ctx context.Context, cs *fake.Clientset) error {
					p := ready(managed("a"), "10.0.0.1")
					p.Annotations[kubernetes.AnnotationInterrupted] = "2026-05-01T12:00:00Z"
					_, err := cs.CoreV1().Pods("ns").Update(ctx, p, metav1.UpdateOptions{})
					return err
				},
				func(ctx context.Context, cs *fake.Clientset) error {
					p := ready(managed("c"), "10.0.0.3")
					p.Status.Conditions[0].Status = corev1.ConditionFalse
					_, err := cs.CoreV1().Pods("ns").Update(ctx, p, metav1.UpdateOptions{})
					return err
				},
				func(ctx context.Context, cs *fake.Clientset) error {
					_, err := cs.CoreV1().Pods("ns").Update(ctx, ready(managed("c"), "10.0.0.3"), metav1.UpdateOptions{})
					return err
				},
				func(ctx context.Context, cs *fake.Clientset) error {
					_, err := cs.CoreV1().Pods("ns").Update(ctx, ready(managed("c"), "10.0.0.9"), metav1.UpdateOptions{})
					return err
				},
			},
			want: [][]string{
				{"add a http://10.0.0.1:8000", "add c http://10.0.0.3:8000"},
				{"drain a http://10.0.0.1:8000"},
				{"drain c http://10.0.0.3:8000"},
				{"add c http://10.0.0.3:8000"},
				{"drain c http://10.0.0.3:8000", "add c http://10.0.0.9:8000"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cs := fake.NewClientset()
				foreign := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "z", Namespace: "ns"}}
				for _, p := range append(tc.seed, foreign) {
					if _, err := cs.CoreV1().Pods("ns").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				ctx, cancel := context.WithCancel(context.Background())
				w := NewPodWatcher(cs, "ns", nil)
				var rec recorder
				done := make(chan error, 1)
				go func() { done <- w.Run(ctx, rec.emit) }()
				time.Sleep(time.Second) // virtual: lets Run's cache-sync poll observe the synced cache
				synctest.Wait()
				got := [][]string{sorted(rec.take())}
				for i, step := range tc.steps {
					if err := step(context.Background(), cs); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					synctest.Wait()
					got = append(got, rec.take())
				}
				if d := diff(tc.want, got); d != "" {
					t.Errorf("events (-want +got):\n%s", d)
				}
				cancel()
				if err := <-done; err != context.Canceled {
					t.Errorf("Run = %v, want context.Canceled", err)
				}
			})
		})
	}
}

// sorted orders the initial list's events (informer order over a list is unspecified).
func sorted(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

func TestReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset(ready(managed("b"), "10.0.0.2"), ready(managed("a"), "10.0.0.1"), managed("c"))
		w := NewPodWatcher(cs, "ns", nil)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { _ = w.Run(ctx, func(Event) {}) }()
		synctest.Wait()
		var ids []string
		for _, in := range w.Ready() {
			ids = append(ids, in.ID)
		}
		if d := diff([]string{"a", "b"}, ids); d != "" {
			t.Errorf("Ready (-want +got):\n%s", d)
		}
		cancel()
		synctest.Wait()
	})
}
