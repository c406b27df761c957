package kubernetes

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sloserve/sloserve/internal/provider"
)

// FuzzSpecFromPod feeds arbitrary annotation values (anyone with patch rights can write them) to
// the pod reader: it must not panic and must never return a negative batching config.
func FuzzSpecFromPod(f *testing.F) {
	f.Add("mlp256", "c5.large/spot", "8", "10ms", "2026-05-01T12:00:00Z", "")
	f.Add("", "", "-3", "-1s", "garbage", "x")
	f.Add("m", "p2.xlarge", "99999999999999999999", "9999999h", "", "2026-05-01T12:00:00.123456789Z")
	f.Fuzz(func(t *testing.T, model, typ, maxBatch, maxWait, launched, interrupted string) {
		cfg := DefaultConfig()
		pod := cfg.buildPod("p", provider.Spec{Model: "m", Type: "c5.large"}, Resources{}, time.Time{}, nil, nil)
		pod.Annotations = map[string]string{
			AnnotationModel: model, AnnotationType: typ, AnnotationMaxBatch: maxBatch,
			AnnotationMaxWait: maxWait, AnnotationLaunched: launched, AnnotationInterrupted: interrupted,
		}
		s := SpecFromPod(pod)
		if s.MaxBatch < 0 || s.MaxWait < 0 {
			t.Errorf("SpecFromPod = %+v: negative batching config", s)
		}
		_ = InstanceFromPod(pod, false)
	})
}

// FuzzNames checks that any model name yields a valid pod name and label value.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"mlp256", "ResNet_50.v2", "__", "", "ü-ñ/ß", "-a-", "a.b_c-d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, model string) {
		name := podName(model, "0123abcd")
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			t.Errorf("podName(%q) = %q: %v", model, name, errs)
		}
		if v := labelValue(model); len(validation.IsValidLabelValue(v)) > 0 {
			t.Errorf("labelValue(%q) = %q: %v", model, v, validation.IsValidLabelValue(v))
		}
	})
}
