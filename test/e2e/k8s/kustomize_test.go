//go:build e2e

package k8s

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
)

const kustomizeDir = "../../../deploy/kustomize"

// TestKustomizeApply runs `kubectl apply -k deploy/kustomize` against the control plane and
// checks what the API server holds: the gateway Deployment with ≥ 2 replicas rolling out with
// RollingUpdate (KWOK runs its pods), the Lease Role with exactly create/get/update/watch on leases and
// list on endpointslices, bound to the ServiceAccount, the two PodDisruptionBudgets and the
// HorizontalPodAutoscaler over the Deployment. `kubectl delete -k` removes it all.
func TestKustomizeApply(t *testing.T) {
	base := adminConfig(t)
	admin, err := clientset.NewForConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl not found: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ns = "sloserve"
	if _, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
		t.Fatalf("namespace %s exists already: this test applies the base into it", ns)
	}
	start := time.Now()
	out, err := exec.CommandContext(ctx, "kubectl", "apply", "-k", kustomizeDir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -k deploy/kustomize: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command("kubectl", "delete", "-k", kustomizeDir, "--wait=false").Run()
	})
	t.Logf("kubectl apply -k deploy/kustomize:\n%s", out)

	dep, err := admin.AppsV1().Deployments(ns).Get(ctx, "sloserve", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Deployment sloserve: %v", err)
	}
	if r := dep.Spec.Replicas; r == nil || *r < 2 {
		t.Errorf("Deployment replicas %v, want ≥ 2", r)
	}
	if dep.Spec.Strategy.Type != "RollingUpdate" {
		t.Errorf("Deployment strategy %q, want RollingUpdate", dep.Spec.Strategy.Type)
	}
	up := waitFor(t, "the gateway replicas available", readyWithin, func() (bool, error) {
		d, err := admin.AppsV1().Deployments(ns).Get(ctx, "sloserve", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas >= 2, err
	})
	t.Logf("Deployment sloserve: %d replicas available %v after the apply (KWOK pods; %v of it waiting)", *dep.Spec.Replicas, time.Since(start).Round(time.Millisecond), up.Round(time.Millisecond))

	role, err := admin.RbacV1().Roles(ns).Get(ctx, "sloserve-leader", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Role sloserve-leader: %v", err)
	}
	got := map[string][]string{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got[g+"/"+res] = append(got[g+"/"+res], r.Verbs...)
			}
		}
	}
	want := map[string][]string{"coordination.k8s.io/leases": {"create", "get", "update", "watch"}, "discovery.k8s.io/endpointslices": {"list"}}
	for k, v := range want {
		g := slices.Sorted(slices.Values(got[k]))
		if !slices.Equal(g, v) {
			t.Errorf("Role sloserve-leader %s verbs %v, want %v", k, g, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("Role sloserve-leader grants %v, want only %v", got, want)
	}
	rb, err := admin.RbacV1().RoleBindings(ns).Get(ctx, "sloserve-leader", metav1.GetOptions{})
	if err != nil || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "sloserve" || rb.RoleRef.Name != "sloserve-leader" {
		t.Errorf("RoleBinding sloserve-leader %+v (%v), want the ServiceAccount sloserve bound to the Role", rb, err)
	}
	for _, name := range []string{"sloserve-gateway", "sloserve-workers"} {
		if _, err := admin.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("PodDisruptionBudget %s: %v", name, err)
		}
	}
	hpa, err := admin.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "sloserve", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("HorizontalPodAutoscaler sloserve: %v", err)
	}
	if hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != "sloserve" || hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 {
		t.Errorf("HorizontalPodAutoscaler %+v, want one over Deployment sloserve with minReplicas ≥ 2", hpa.Spec)
	}

	out, err = exec.CommandContext(ctx, "kubectl", "delete", "-k", kustomizeDir, "--wait=false").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl delete -k deploy/kustomize: %v\n%s", err, out)
	}
	waitFor(t, "the ClusterRole gone after delete -k", 30*time.Second, func() (bool, error) {
		_, err := admin.RbacV1().ClusterRoles().Get(ctx, "sloserve-node-reader", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}
