package facts

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
)

// EndpointSlices finds the replicas behind a Service: the ready endpoints of its
// discovery.k8s.io EndpointSlices (label kubernetes.io/service-name) on the named port. It
// lists them at every call (once per controller sample); the RBAC needs list on endpointslices
// in the namespace.
type EndpointSlices struct {
	Client    clientset.Interface
	Namespace string
	Service   string
	// Port is the name of the Service port serving the gateway's HTTP API.
	Port string
}

var _ Peers = EndpointSlices{}

// URLs implements Peers: http://<address>:<port> of every ready endpoint, sorted.
func (e EndpointSlices) URLs(ctx context.Context) ([]string, error) {
	l, err := e.Client.DiscoveryV1().EndpointSlices(e.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + e.Service})
	if err != nil {
		return nil, fmt.Errorf("endpointslices of %s/%s: %w", e.Namespace, e.Service, err)
	}
	var out []string
	for _, s := range l.Items {
		port := int32(0)
		for _, p := range s.Ports {
			if p.Name != nil && *p.Name == e.Port && p.Port != nil {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				u := "http://" + net.JoinHostPort(a, strconv.Itoa(int(port)))
				if !slices.Contains(out, u) {
					out = append(out, u)
				}
			}
		}
	}
	slices.Sort(out)
	return out, nil
}
