package facts

import (
	"context"
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestEndpointSlices: the ready endpoints of the Service's slices on the named port, each once;
// other Services' slices and not-ready endpoints are left out.
func TestEndpointSlices(t *testing.T) {
	ptr := func(s string) *string { return &s }
	port := func(n int32) *int32 { return &n }
	yes, no := true, false
	slice := func(name, svc string, ready *bool, addrs ...string) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr("grpc"), Port: port(8081)}, {Name: ptr("http"), Port: port(8080)}},
		}
		for _, a := range addrs {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: ready}})
		}
		return s
	}
	cs := fake.NewClientset(
		slice("gw-1", "sloserve", &yes, "10.0.0.1", "10.0.0.2"),
		slice("gw-2", "sloserve", nil, "10.0.0.3", "10.0.0.1"),
		slice("gw-3", "sloserve", &no, "10.0.0.9"),
		slice("other", "other", &yes, "10.0.0.7"),
	)
	got, err := EndpointSlices{Client: cs, Namespace: "ns", Service: "sloserve", Port: "http"}.URLs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://10.0.0.1:8080", "http://10.0.0.2:8080", "http://10.0.0.3:8080"}
	if !slices.Equal(got, want) {
		t.Errorf("URLs (-want +got):\n- %v\n+ %v", want, got)
	}
}
