// Package adapters serves the TF Serving / KServe V1 REST predict API and the Amazon SageMaker
// container contract as thin HTTP adapters over the same oip.Core as the OIP v2 handler.
package adapters
