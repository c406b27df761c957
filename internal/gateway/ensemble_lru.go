package gateway

import "container/list"

// lru is a bounded map from request id to the predictions of an answered ensemble request,
// evicting the least recently answered. Not safe for concurrent use (ensembleRT.mu guards it).
type lru struct {
	cap   int
	order *list.List // front: most recent
	byID  map[string]*list.Element
}

type lruEntry struct {
	id  string
	rec recentRequest
}

func newLRU(capacity int) *lru {
	return &lru{cap: max(capacity, 1), order: list.New(), byID: map[string]*list.Element{}}
}

// put stores rec under id (replacing an older answer with the same id), evicting the oldest
// entry beyond the capacity.
func (l *lru) put(id string, rec recentRequest) {
	if el, ok := l.byID[id]; ok {
		el.Value.(*lruEntry).rec = rec
		l.order.MoveToFront(el)
		return
	}
	l.byID[id] = l.order.PushFront(&lruEntry{id: id, rec: rec})
	for l.order.Len() > l.cap {
		old := l.order.Back()
		l.order.Remove(old)
		delete(l.byID, old.Value.(*lruEntry).id)
	}
}

// peek returns the entry for id without changing its recency.
func (l *lru) peek(id string) (recentRequest, bool) {
	el, ok := l.byID[id]
	if !ok {
		return recentRequest{}, false
	}
	return el.Value.(*lruEntry).rec, true
}

// remove drops id.
func (l *lru) remove(id string) {
	if el, ok := l.byID[id]; ok {
		l.order.Remove(el)
		delete(l.byID, id)
	}
}

// len returns the number of entries.
func (l *lru) len() int { return l.order.Len() }
