// Why a container or a Pod cannot start yet; the message lands in the container's waiting state or in
// an event, and the node agent retries.

/** A container cannot be configured (CreateContainerConfigError): a missing ConfigMap, Secret or key. */
export class ContainerConfigError extends Error {}

/** A container cannot be created (CreateContainerError): no command, a bad subPath. */
export class CreateContainerError extends Error {}

/** The image is not in the catalog (ErrImagePull). */
export class ImageMissingError extends Error {}

/** A volume cannot be set up (a FailedMount event; the Pod stays in ContainerCreating). */
export class MountError extends Error {}
