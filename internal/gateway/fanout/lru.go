package fanout

import "container/list"

// lru is a bounded map evicting the least recently put or got entry: the ensembles' answered
// requests kept for label feedback (by request id) and their per-constraint selection state.
// Not safe for concurrent use (Runtime.mu guards it).
type lru[K comparable, V any] struct {
	cap   int
	order *list.List // front: most recent
	byKey map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](capacity int) *lru[K, V] {
	return &lru[K, V]{cap: max(capacity, 1), order: list.New(), byKey: map[K]*list.Element{}}
}

// put stores v under k (replacing an older value), evicting the oldest entry beyond the
// capacity.
func (l *lru[K, V]) put(k K, v V) {
	if el, ok := l.byKey[k]; ok {
		el.Value.(*lruEntry[K, V]).val = v
		l.order.MoveToFront(el)
		return
	}
	l.byKey[k] = l.order.PushFront(&lruEntry[K, V]{key: k, val: v})
	for l.order.Len() > l.cap {
		old := l.order.Back()
		l.order.Remove(old)
		delete(l.byKey, old.Value.(*lruEntry[K, V]).key)
	}
}

// get returns the value for k and makes it the most recent.
func (l *lru[K, V]) get(k K) (V, bool) {
	el, ok := l.byKey[k]
	if !ok {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(el)
	return el.Value.(*lruEntry[K, V]).val, true
}

// peek returns the value for k without changing its recency.
func (l *lru[K, V]) peek(k K) (V, bool) {
	el, ok := l.byKey[k]
	if !ok {
		var zero V
		return zero, false
	}
	return el.Value.(*lruEntry[K, V]).val, true
}

// remove drops k.
func (l *lru[K, V]) remove(k K) {
	if el, ok := l.byKey[k]; ok {
		l.order.Remove(el)
		delete(l.byKey, k)
	}
}

// len returns the number of entries.
func (l *lru[K, V]) len() int { return l.order.Len() }

// each calls f for every entry, most recent first.
func (l *lru[K, V]) each(f func(K, V)) {
	for el := l.order.Front(); el != nil; el = el.Next() {
		e := el.Value.(*lruEntry[K, V])
		f(e.key, e.val)
	}
}
