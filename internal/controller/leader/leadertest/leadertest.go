// Package leadertest gives the leader-election tests a fake clientset with the API server's
// optimistic concurrency on Leases.
package leadertest

import (
	"strconv"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Clientset is a fake clientset whose Leases have the API server's optimistic concurrency:
// an update whose resourceVersion is not the stored one fails with a conflict (the fake's
// tracker alone lets every writer win, and two electors would both lead).
func Clientset() *fake.Clientset {
	cs := fake.NewClientset()
	var mu sync.Mutex
	rv := 0
	gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
	cs.PrependReactor("*", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		obj, ok := a.(interface{ GetObject() runtime.Object })
		switch {
		case ok && a.GetVerb() == "create":
			l := obj.GetObject().(*coordinationv1.Lease).DeepCopy()
			rv++
			l.ResourceVersion = strconv.Itoa(rv)
			if err := cs.Tracker().Create(gvr, l, l.Namespace); err != nil {
				return true, nil, err
			}
			return true, l, nil
		case ok && a.GetVerb() == "update":
			l := obj.GetObject().(*coordinationv1.Lease).DeepCopy()
			cur, err := cs.Tracker().Get(gvr, l.Namespace, l.Name)
			if err != nil {
				return true, nil, err
			}
			if cur.(*coordinationv1.Lease).ResourceVersion != l.ResourceVersion {
				return true, nil, apierrors.NewConflict(gvr.GroupResource(), l.Name, nil)
			}
			rv++
			l.ResourceVersion = strconv.Itoa(rv)
			if err := cs.Tracker().Update(gvr, l, l.Namespace); err != nil {
				return true, nil, err
			}
			return true, l, nil
		}
		return false, nil, nil
	})
	return cs
}
