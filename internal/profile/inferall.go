package profile

import "time"

// InferAllModelName names the model InferAllInception profiles.
const InferAllModelName = "inception"

// inferAllBatches are the batch sizes of InferAll's tables.
var inferAllBatches = []int{1, 2, 4, 8, 16, 32, 64, 128, 256}

// InferAllInception returns Inception's profile (the simulator's default model, sim.DefaultModel):
// served on c5.large, c5.xlarge and c5.2xlarge (InferAll's three VM sizes; vm_max_slots
// concurrent requests each) and on Lambda at 256–3008 MB, transcribed from veerkumar/InferAll
// config.py (MIT; /work/shared/data/profiles/inferall-lambda-vm-latency.json), batch 1–256 in ms.
func InferAllInception() Model {
	curve := func(ms ...float64) Curve {
		ps := make([]Point, len(ms))
		for i, v := range ms {
			ps[i] = Point{Batch: inferAllBatches[i], Time: time.Duration(v * float64(time.Millisecond))}
		}
		c, err := NewCurve(ps)
		if err != nil {
			panic(err) // the literals below are valid
		}
		return c
	}
	return Model{
		Name: InferAllModelName,
		VM: map[string]Backend{
			"c5.large":   {Curve: curve(35, 36, 37, 39, 44, 56, 82, 129, 225), Slots: 9},
			"c5.xlarge":  {Curve: curve(22, 23, 24, 26, 32, 50, 66, 116, 217), Slots: 17},
			"c5.2xlarge": {Curve: curve(14, 15, 16, 20, 23, 34, 60, 108, 210), Slots: 30},
		},
		Serverless: MemoryTable{
			256:  curve(2100, 2100, 2150, 2150, 2200, 2250, 2500),
			512:  curve(830, 830, 830, 830, 850, 900, 1050, 1200, 1600),
			1024: curve(380, 395, 400, 400, 410, 410, 450, 570, 750),
			2048: curve(205, 210, 210, 210, 210, 210, 270, 310, 400),
			3008: curve(144, 144, 144, 150, 150, 152, 180, 230, 350),
		},
	}
}
