package experiment

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Runs named by what the policy decoded (issue #17 item 6). A tuned baseline's answer is often
// the policy's paper default spelled out (mark-tuned's headroom 1 in MArk's setting, where the
// setting's file says 1), so its evaluation run is the paper-default row's run under another
// cache key; on the scoreboard a fifth of the tuned rows were. The options every Decode of a
// policy's constructor filled in, dumped with their types and in order, name the policy as it
// runs: runs whose dumps, world and part agree are the same simulation, and the second is
// answered from the first (World.run). Where the built policy itself dumps (no func in it:
// knative, mlproxy, fixed, target tracking), the dump of the policy as built names the run
// instead, without the load it was told: what it made of the load is in it, so runs told
// other loads or knob values that build the same policy are one simulation too
// (TestRunNamedByBuiltPolicy).

// dumper writes a deterministic dump of decoded options: every field, exported or not, maps by
// sorted keys, pointers followed. ok turns false on what it cannot name by value (a func, a
// channel, an unsafe pointer, nesting past maxDumpDepth): such a run has no dump.
type dumper struct {
	b  strings.Builder
	ok bool
}

// maxDumpDepth bounds the nesting a dump follows (a cycle of pointers ends there).
const maxDumpDepth = 32

// dumpOptions returns the dump of v (a pointer to a decoded options value), or false.
func dumpOptions(v any) (string, bool) {
	d := dumper{ok: true}
	d.value(reflect.ValueOf(v), 0)
	return d.b.String(), d.ok
}

func (d *dumper) value(v reflect.Value, depth int) {
	if !d.ok {
		return
	}
	if depth > maxDumpDepth {
		d.ok = false
		return
	}
	if !v.IsValid() {
		d.b.WriteString("<nil>")
		return
	}
	d.b.WriteString(v.Type().String())
	d.b.WriteByte('(')
	defer d.b.WriteByte(')')
	switch v.Kind() {
	case reflect.Bool:
		d.b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		d.b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		d.b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		d.b.WriteString(strconv.FormatUint(math.Float64bits(v.Float()), 16)) // bits: -0 and NaNs apart
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		fmt.Fprintf(&d.b, "%x,%x", math.Float64bits(real(c)), math.Float64bits(imag(c)))
	case reflect.String:
		d.b.WriteString(strconv.Quote(v.String()))
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			d.b.WriteString("nil")
			return
		}
		d.value(v.Elem(), depth+1)
	case reflect.Slice:
		if v.IsNil() {
			d.b.WriteString("nil")
			return
		}
		fallthrough
	case reflect.Array:
		for i := range v.Len() {
			d.value(v.Index(i), depth+1)
		}
	case reflect.Map:
		if v.IsNil() {
			d.b.WriteString("nil")
			return
		}
		type kv struct{ k, v string }
		var es []kv
		for it := v.MapRange(); it.Next(); {
			k, e := dumper{ok: true}, dumper{ok: true}
			k.value(it.Key(), depth+1)
			e.value(it.Value(), depth+1)
			if !k.ok || !e.ok {
				d.ok = false
				return
			}
			es = append(es, kv{k.b.String(), e.b.String()})
		}
		slices.SortFunc(es, func(a, b kv) int { return strings.Compare(a.k, b.k) })
		for _, e := range es {
			d.b.WriteString(e.k)
			d.b.WriteByte(':')
			d.b.WriteString(e.v)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			d.b.WriteString(v.Type().Field(i).Name)
			d.b.WriteByte('=')
			d.value(v.Field(i), depth+1)
		}
	default: // func, chan, unsafe pointer
		d.ok = false
	}
}
