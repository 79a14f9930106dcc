package registry

import (
	"testing"

	"github.com/gosdt/gosdt/sled"
)

// tableFolder is a Folder whose cells are made by hand: Fold counts its calls.
type tableFolder struct {
	t     FoldTable
	folds int
}

func (f *tableFolder) Fire(*Firing)                          {}
func (f *tableFolder) Fold(int, int, uint32, uintptr, int64) { f.folds++ }
func (f *tableFolder) FoldTable() *FoldTable                 { return &f.t }

// TestCellAtHand: a probe's one folder finds a site's cell beside its hit counter
// only once a fire has kept it there, and only its own table's: a cell another
// folder kept (a fire that raced with that folder's close) is not folded into;
// renewing the table (a folder's close) drops every cell at hand.
func TestCellAtHand(t *testing.T) {
	defer func(h []uint64, stride int, subs []*subscription) {
		reg.hitShards, reg.hitStride, reg.subs = h, stride, subs
		setAtHand(nil)
	}(reg.hitShards, reg.hitStride, reg.subs)
	reg.hitShards, reg.hitStride = make([]uint64, 2*8), 8 // two Ps, eight sites

	folder := func() (*tableFolder, *foldEntry, *FoldCell) {
		f := &tableFolder{}
		c := new(FoldCell)
		c.Init(nil)
		f.t.SetShards([]*FoldShard{{}, {Slots: []*FoldCell{3: c}}}) // P 1, site 3
		return f, &foldEntry{f: f, t: &f.t, all: true, one: true}, c
	}
	s := &site{Site: new(sled.Site), index: 3}
	fa, a, ca := folder()
	_, b, _ := folder()
	reg.subs = []*subscription{{folder: fa}}
	reg.renewAtHand()

	if c := a.Cell(1, s); c != nil {
		t.Fatalf("a cell at hand before any fire kept it: %p", c)
	}
	a.Fold(1, s, 5) // folds into ca, then keeps it
	if c := a.Cell(1, s); c != ca {
		t.Fatalf("after a fire, the cell at hand is %p, want the folder's %p", c, ca)
	}
	if c := a.Cell(0, s); c != nil {
		t.Errorf("P 0 finds P 1's cell at hand: %p", c)
	}
	if c := b.Cell(1, s); c != nil {
		t.Errorf("another folder finds the first one's cell at hand: %p", c)
	}
	if c := a.Cell(1, &site{Site: new(sled.Site), index: 4}); c != nil {
		t.Errorf("another site finds site 3's cell at hand: %p", c)
	}
	if c := a.Cell(2, s); c != nil {
		t.Errorf("a P beyond the hit counters finds a cell: %p", c)
	}
	a.Fold(0, s, 7) // P 0 has no cell: the folder's Fold, nothing kept
	if fa.folds != 1 || a.Cell(0, s) != nil {
		t.Errorf("a fire with no cell: folder called %d times (want 1), cell at hand %p", fa.folds, a.Cell(0, s))
	}
	if ca.Count != 1 || ca.Sum != 5 {
		t.Errorf("the cell folded count %d sum %d, want 1 and 5", ca.Count, ca.Sum)
	}
	reg.renewAtHand()
	if c := a.Cell(1, s); c != nil {
		t.Errorf("a renewed table still holds a cell: %p", c)
	}
	reg.subs = nil
	reg.renewAtHand()
	if haveAtHand() {
		t.Errorf("no folder subscribed, and a table of cells at hand is kept")
	}
	if c := a.Cell(1, s); c != nil {
		t.Errorf("no table, and a cell at hand: %p", c)
	}
	a.Fold(1, s, 1) // no table: folds, keeps nothing, does not fault
	if ca.Count != 2 {
		t.Errorf("the cell folded %d fires, want 2", ca.Count)
	}
}
