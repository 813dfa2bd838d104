//go:build linux

package chatwire

import (
	"reflect"
	"testing"
)

func TestAskRoundTrip(t *testing.T) {
	a := Ask{N: 2000, Rate: 200, Seq: 4000}
	got, ok := ParseAsk(a.Prompt())
	if !ok || got != a {
		t.Fatalf("ParseAsk(%q) = %+v, %v", a.Prompt(), got, ok)
	}
	for _, bad := range []string{"", "hello", "stream n=0 rate=1 seq=0", "stream n=1 rate=x seq=0", "stream n=1 rate=1 seq=0 x=1"} {
		if _, ok := ParseAsk(bad); ok {
			t.Errorf("ParseAsk(%q) accepted", bad)
		}
	}
}

func TestMarkers(t *testing.T) {
	a := Ask{N: 450, Seq: 10}
	var got []int
	Markers(a.Text(), func(n int) { got = append(got, n) })
	want := make([]int, a.N)
	for i := range want {
		want[i] = a.Seq + i
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("markers of the text: %v…, want %v…", got[:10], want[:10])
	}
	got = nil
	Markers("sw12 w3x w45 **w6** `w7`│w8 w", func(n int) { got = append(got, n) })
	if !reflect.DeepEqual(got, []int{45, 6, 7, 8}) {
		t.Errorf("markers = %v", got)
	}
}
