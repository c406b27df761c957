package sim

// event kinds.
const (
	evVMDone uint8 = iota
	evSLDone
	evReady
	evWakeVM
	evWakeSL
	evSample
	evScale
	evSpotNotice
	evSpotReclaim
	evStall
)
