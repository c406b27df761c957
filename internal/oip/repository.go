package oip

import "context"

// RepositoryManager is implemented by a Core that loads and unloads models at run time —
// Triton's model repository extension (POST /v2/repository/models/{model}/load and …/unload,
// and the gRPC RepositoryModelLoad/RepositoryModelUnload RPCs). The REST handler and the gRPC
// service serve those routes only when their Core implements it (404 / UNIMPLEMENTED otherwise).
type RepositoryManager interface {
	// LoadModel loads a model from the repository, or reloads it when it is loaded (its new
	// version set and configuration replace the old once ready; requests in flight finish on the
	// old). It returns an error wrapping ErrNotFound when the repository holds no such model and
	// ErrBadRequest for a malformed configuration or parameters. It returns once the model is
	// ready or loading failed.
	LoadModel(ctx context.Context, model string, params map[string]any) error
	// UnloadModel stops serving a model: new requests get ErrNotFound, those in flight are
	// answered, then its instances stop. Unloading a model that is not loaded is not an error;
	// one the repository does not hold wraps ErrNotFound.
	UnloadModel(ctx context.Context, model string) error
}
