// Package oci holds the subset of the OCI image spec the builder writes and reads (image config,
// manifest, index) and the oci-archive tarball format: an OCI image layout in one tar file, which
// `ctr images import`, umoci (after untar) and skopeo (oci-archive:) all accept.
package oci

// Media types of the OCI image spec v1.
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayerGz  = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// Annotations on the index entry that name the image. containerd's importer takes the full
// reference from AnnotationContainerdName; umoci and skopeo look images up by the tag in
// AnnotationRefName.
const (
	AnnotationContainerdName = "io.containerd.image.name"
	AnnotationRefName        = "org.opencontainers.image.ref.name"
)

// Descriptor points at a blob.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *Platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Platform is the os/architecture an image runs on.
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// Index is index.json of an image layout.
type Index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

// Manifest lists an image's config and layers.
type Manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        Descriptor   `json:"config"`
	Layers        []Descriptor `json:"layers"`
}

// Image is the image config blob.
type Image struct {
	Created      string         `json:"created"`
	Architecture string         `json:"architecture"`
	OS           string         `json:"os"`
	Config       ImageConfig    `json:"config"`
	RootFS       RootFS         `json:"rootfs"`
	History      []HistoryEntry `json:"history"`
}

// ImageConfig holds the runtime defaults of an image.
type ImageConfig struct {
	User       string            `json:"User,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
	StopSignal string            `json:"StopSignal,omitempty"`
}

// RootFS lists the uncompressed layer digests, bottom first.
type RootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

// HistoryEntry describes how a layer was made.
type HistoryEntry struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}
