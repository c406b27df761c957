package ensemble

import "time"

// ImageNetModels returns Cocktail Table 1 (latency on a c5.xlarge, top-1 accuracy, packing
// factor) for the nine models of the per-class ImageNet table, under that table's names
// (MobileNet is Table 1's MobileNetV1). Simulations replace Accuracy with the table's own mean.
func ImageNetModels() []Model {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	return []Model{
		{Name: "MobileNet", Latency: ms(43.45), Accuracy: 0.7040, PackingFactor: 10},
		{Name: "MobileNetV2", Latency: ms(41.5), Accuracy: 0.7130, PackingFactor: 10},
		{Name: "NASNetMobile", Latency: ms(78.18), Accuracy: 0.7440, PackingFactor: 3},
		{Name: "DenseNet121", Latency: ms(102.35), Accuracy: 0.7500, PackingFactor: 3},
		{Name: "DenseNet201", Latency: ms(152.21), Accuracy: 0.7730, PackingFactor: 2},
		{Name: "Xception", Latency: ms(119.2), Accuracy: 0.7900, PackingFactor: 4},
		{Name: "InceptionV3", Latency: ms(89), Accuracy: 0.7790, PackingFactor: 5},
		{Name: "ResNet50V2", Latency: ms(89.5), Accuracy: 0.7600, PackingFactor: 6},
		{Name: "InceptionResNetV2", Latency: ms(151.96), Accuracy: 0.8030, PackingFactor: 1},
	}
}
