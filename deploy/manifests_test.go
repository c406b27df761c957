package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"

	"github.com/sloserve/sloserve/internal/config"
)

// object is one decoded manifest.
type object = map[string]any

// renderHelm renders deploy/helm/sloserve into namespace sloserve with values, as
// `helm template sloserve deploy/helm/sloserve -n sloserve` does.
func renderHelm(t *testing.T, values map[string]any) []object {
	t.Helper()
	ch, err := loader.Load("helm/sloserve")
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	vals, err := chartutil.ToRenderValues(ch, values,
		chartutil.ReleaseOptions{Name: "sloserve", Namespace: "sloserve", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatalf("chart values: %v", err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatalf("render chart: %v", err)
	}
	var objs []object
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if strings.HasSuffix(name, ".tpl") || strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		objs = append(objs, decodeAll(t, name, files[name])...)
	}
	return objs
}

// renderKustomize runs `kubectl kustomize deploy/kustomize`; it skips the test without kubectl.
func renderKustomize(t *testing.T) []object {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl not found in $PATH: install kubectl (its kustomize runs offline) to compare the Helm chart with deploy/kustomize")
	}
	var stderr bytes.Buffer
	cmd := exec.Command("kubectl", "kustomize", "kustomize")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize deploy/kustomize: %v\n%s", err, stderr.Bytes())
	}
	return decodeAll(t, "kubectl kustomize", string(out))
}

func decodeAll(t *testing.T, source, stream string) []object {
	t.Helper()
	var objs []object
	for doc := range strings.SplitSeq("\n"+stream, "\n---") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		if len(o) > 0 {
			objs = append(objs, o)
		}
	}
	return objs
}

// key names an object: Kind/namespace/name.
func key(o object) string {
	return fmt.Sprintf("%s/%s/%s", o["kind"], str(o, "metadata", "namespace"), str(o, "metadata", "name"))
}

// get walks o along path (map keys); nil when a step is missing.
func get(o any, path ...string) any {
	for _, p := range path {
		m, ok := o.(map[string]any)
		if !ok {
			return nil
		}
		o = m[p]
	}
	return o
}

func str(o any, path ...string) string { s, _ := get(o, path...).(string); return s }

func list(o any, path ...string) []any { l, _ := get(o, path...).([]any); return l }

// podSpec is the pod spec of a Deployment or PodTemplate, nil for other kinds.
func podSpec(o object) map[string]any {
	switch o["kind"] {
	case "Deployment":
		s, _ := get(o, "spec", "template", "spec").(map[string]any)
		return s
	case "PodTemplate":
		s, _ := get(o, "template", "spec").(map[string]any)
		return s
	}
	return nil
}

// checkInvariants checks what docs/kubernetes.md promises of the manifests: pinned images,
// a rolling gateway with a startup probe and a gRPC port, read-only non-root containers with
// no capabilities, resource requests, a disruption budget, and a config whose ports and worker
// image match the Deployment's.
func checkInvariants(t *testing.T, objs []object) {
	t.Helper()
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	byKey := map[string]object{}
	for _, o := range objs {
		byKey[key(o)] = o
	}
	dep := byKey["Deployment/sloserve/sloserve"]
	if dep == nil {
		t.Fatalf("no Deployment sloserve/sloserve among %v", slices.Sorted(maps.Keys(byKey)))
	}
	// Several gateway replicas (docs/deployment.md): two at least, a budget that keeps one, an
	// autoscaler over the Deployment, and leader election with the Lease rights.
	if r, _ := get(dep, "spec", "replicas").(float64); r < 2 {
		bad("Deployment replicas %v, want ≥ 2", get(dep, "spec", "replicas"))
	}
	if pdb := byKey["PodDisruptionBudget/sloserve/sloserve-gateway"]; fmt.Sprint(get(pdb, "spec", "minAvailable")) != "1" {
		bad("gateway PodDisruptionBudget %v, want minAvailable 1", get(pdb, "spec"))
	}
	hpa := byKey["HorizontalPodAutoscaler/sloserve/sloserve"]
	if str(hpa, "spec", "scaleTargetRef", "kind") != "Deployment" || str(hpa, "spec", "scaleTargetRef", "name") != "sloserve" {
		bad("HorizontalPodAutoscaler sloserve %v, want one over Deployment sloserve", get(hpa, "spec"))
	}
	if m, _ := get(hpa, "spec", "minReplicas").(float64); m < 2 {
		bad("HorizontalPodAutoscaler minReplicas %v, want ≥ 2", get(hpa, "spec", "minReplicas"))
	}
	if byKey["Role/sloserve/sloserve-leader"] == nil || byKey["RoleBinding/sloserve/sloserve-leader"] == nil {
		bad("no Role and RoleBinding sloserve-leader (the Lease rights)")
	}
	if s := str(dep, "spec", "strategy", "type"); s != "RollingUpdate" {
		bad("Deployment strategy %q, want RollingUpdate", s)
	}
	ru := get(dep, "spec", "strategy", "rollingUpdate")
	if fmt.Sprint(get(ru, "maxUnavailable")) != "0" || fmt.Sprint(get(ru, "maxSurge")) != "1" {
		bad("Deployment rollingUpdate %v, want maxUnavailable 0, maxSurge 1", ru)
	}
	gw := list(podSpec(dep), "containers")
	if len(gw) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(gw))
	}
	c := gw[0]
	if str(c, "startupProbe", "httpGet", "path") != "/v2/health/live" {
		bad("gateway startupProbe %v, want an httpGet of /v2/health/live", get(c, "startupProbe"))
	}
	if str(c, "livenessProbe", "httpGet", "path") != "/v2/health/live" || str(c, "readinessProbe", "httpGet", "path") != "/v2/health/ready" {
		bad("gateway liveness %v / readiness %v, want /v2/health/live and /v2/health/ready", get(c, "livenessProbe"), get(c, "readinessProbe"))
	}
	ports := map[string]string{}
	for _, p := range list(c, "ports") {
		ports[str(p, "name")] = fmt.Sprint(get(p, "containerPort"))
	}
	if ports["http"] == "" || ports["grpc"] == "" {
		bad("gateway container ports %v, want http and grpc", ports)
	}
	svc := byKey["Service/sloserve/sloserve"]
	var svcPorts []string
	for _, p := range list(svc, "spec", "ports") {
		svcPorts = append(svcPorts, fmt.Sprint(get(p, "targetPort")))
	}
	if !slices.Contains(svcPorts, "grpc") || !slices.Contains(svcPorts, "http") {
		bad("Service sloserve target ports %v, want http and grpc", svcPorts)
	}
	pdb := 0
	for _, o := range objs {
		if o["kind"] == "PodDisruptionBudget" {
			pdb++
		}
		ps := podSpec(o)
		if ps == nil {
			continue
		}
		podNonRoot := get(ps, "securityContext", "runAsNonRoot") == true
		mounts := map[string]bool{}
		for _, v := range list(ps, "volumes") {
			mounts[str(v, "name")] = get(v, "emptyDir") != nil
		}
		for _, c := range list(ps, "containers") {
			where := key(o) + " container " + str(c, "name")
			img := str(c, "image")
			if name, tag, ok := strings.Cut(img, ":"); !ok || name == "" || tag == "" || tag == "latest" {
				bad("%s: image %q, want a pinned tag (not latest)", where, img)
			}
			sc := get(c, "securityContext")
			if get(sc, "readOnlyRootFilesystem") != true {
				bad("%s: readOnlyRootFilesystem %v, want true", where, get(sc, "readOnlyRootFilesystem"))
			}
			if get(sc, "runAsNonRoot") != true && !podNonRoot {
				bad("%s: runAsNonRoot not set on the container or the pod", where)
			}
			if get(sc, "allowPrivilegeEscalation") != false {
				bad("%s: allowPrivilegeEscalation %v, want false", where, get(sc, "allowPrivilegeEscalation"))
			}
			if drop := list(sc, "capabilities", "drop"); !slices.Contains(drop, any("ALL")) {
				bad("%s: capabilities drop %v, want ALL", where, drop)
			}
			if get(c, "resources", "requests", "cpu") == nil || get(c, "resources", "requests", "memory") == nil {
				bad("%s: resources %v, want cpu and memory requests", where, get(c, "resources"))
			}
			tmp := false
			for _, m := range list(c, "volumeMounts") {
				if str(m, "mountPath") == "/tmp" && mounts[str(m, "name")] {
					tmp = true
				}
			}
			if !tmp {
				bad("%s: no emptyDir at /tmp, the one writable path of a read-only root", where)
			}
		}
	}
	if pdb == 0 {
		bad("no PodDisruptionBudget")
	}
	// The config the gateway reads must listen where the container ports say and launch workers
	// of the same pinned image.
	cm := byKey["ConfigMap/sloserve/sloserve-config"]
	cfg, err := config.Decode(strings.NewReader(str(cm, "data", "serve.yaml")))
	if err != nil {
		t.Fatalf("ConfigMap sloserve-config serve.yaml: %v", err)
	}
	for field, addr := range map[string]string{"http": cfg.Gateway.Addr, "grpc": cfg.Gateway.GRPCAddr} {
		if _, port, _ := net.SplitHostPort(addr); port != ports[field] {
			bad("config's %s address %q, want port %s (the container port %s)", field, addr, ports[field], field)
		}
	}
	if le := cfg.Controller.LeaderElection; !le.Enabled || cfg.Controller.Peers.Service != "sloserve" {
		bad("config controller.leader_election.enabled %v, peers.service %q: want leader election with the Service sloserve's peers", le.Enabled, cfg.Controller.Peers.Service)
	}
	podName := false
	for _, e := range list(c, "env") {
		podName = podName || (str(e, "name") == config.EnvPodName && str(e, "valueFrom", "fieldRef", "fieldPath") == "metadata.name")
	}
	if !podName {
		bad("gateway env has no %s from metadata.name (the replica's identity in the Lease)", config.EnvPodName)
	}
	if wi := cfg.Provider.Kubernetes.Image; wi != str(c, "image") {
		bad("provider.kubernetes.image %q (the workers), want the gateway's %q", wi, str(c, "image"))
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}

// TestHelmChart renders the chart with its default values and checks the invariants.
func TestHelmChart(t *testing.T) {
	checkInvariants(t, renderHelm(t, nil))
}

// TestKustomize checks the invariants on `kubectl kustomize deploy/kustomize`.
func TestKustomize(t *testing.T) {
	checkInvariants(t, renderKustomize(t))
}

// TestHelmMatchesKustomize: the chart (with namespace.create, as the kustomize base creates its
// namespace) renders the same objects as the kustomize base — same kinds and names, and the same
// content apart from labels (the chart's include the base's) and annotations (the chart adds a
// config checksum to the pod template).
func TestHelmMatchesKustomize(t *testing.T) {
	kust := renderKustomize(t)
	helm := renderHelm(t, map[string]any{"namespace": map[string]any{"create": true}})
	want, got := index(kust), index(helm)
	if k, h := slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got)); !slices.Equal(k, h) {
		t.Fatalf("objects (-kustomize +helm):\n- %v\n+ %v", k, h)
	}
	for k, w := range want {
		g := got[k]
		wl, _ := get(w, "metadata", "labels").(map[string]any)
		gl, _ := get(g, "metadata", "labels").(map[string]any)
		for name, v := range wl {
			if gl[name] != v {
				t.Errorf("%s: label %s=%v in kustomize, %v in helm", k, name, v, gl[name])
			}
		}
		if d := diff(strip(w), strip(g), ""); d != "" {
			t.Errorf("%s differs (-kustomize +helm):\n%s", k, d)
		}
	}
}

func index(objs []object) map[string]object {
	m := map[string]object{}
	for _, o := range objs {
		m[key(o)] = o
	}
	return m
}

// strip drops what the two renderings may legitimately differ in: labels and annotations of the
// object and of a Deployment's pod template.
func strip(o object) object {
	o = deepCopy(o).(object)
	md, _ := o["metadata"].(map[string]any)
	delete(md, "labels")
	delete(md, "annotations")
	if o["kind"] == "Deployment" {
		if tm, ok := get(o, "spec", "template", "metadata").(map[string]any); ok {
			delete(tm, "annotations")
		}
	}
	return o
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, x := range v {
			l[i] = deepCopy(x)
		}
		return l
	}
	return v
}

// diff lists the paths where a and b differ, one "- path: a" / "+ path: b" pair a line.
func diff(a, b any, path string) string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var sb strings.Builder
		for _, k := range slices.Sorted(maps.Keys(mergeKeys(am, bm))) {
			sb.WriteString(diff(am[k], bm[k], path+"."+k))
		}
		return sb.String()
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var sb strings.Builder
		for i := range al {
			sb.WriteString(diff(al[i], bl[i], fmt.Sprintf("%s[%d]", path, i)))
		}
		return sb.String()
	}
	if reflect.DeepEqual(a, b) {
		return ""
	}
	return fmt.Sprintf("- %s: %v\n+ %s: %v\n", path, a, path, b)
}

func mergeKeys(a, b map[string]any) map[string]any {
	m := maps.Clone(a)
	maps.Copy(m, b)
	return m
}
