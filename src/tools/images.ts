/**
 * Image values a tool may return (spec 7.6): they become a `MultimodalToolResultMutation`, because
 * providers accept images only in user messages.
 */

/**
 * What kind of image value a value is, by a registered symbol rather than its class: a tool module may
 * have its own copy of patchloop (its project's), whose classes are not this copy's.
 */
const KIND = Symbol.for('patchloop.image-value');
type Kind = 'image_url' | 'image_file' | 'described_images';

function kindOf(value: unknown): Kind | undefined {
  return typeof value === 'object' && value !== null ? (value as { [KIND]?: Kind })[KIND] : undefined;
}

/** An image the provider fetches itself: an `https://` (or `http://`) URL, or a `data:image/...` URL. */
export class ImageUrl {
  readonly [KIND] = 'image_url';
  constructor(
    readonly url: string,
    readonly detail?: string,
  ) {}
}

/** A local image file, read by the tool activity and sent as a `data:` URL. */
export class ImageFile {
  readonly [KIND] = 'image_file';
  constructor(
    readonly path: string,
    readonly detail?: string,
  ) {}
}

export type ImageValue = ImageUrl | ImageFile;

/** A description plus one image or a list of images. */
export class DescribedImages {
  readonly [KIND] = 'described_images';
  constructor(
    readonly text: string,
    readonly images: ImageValue | ImageValue[],
  ) {}
}

export const imageUrl = (url: string, detail?: string) => new ImageUrl(url, detail);
export const imageFile = (path: string, detail?: string) => new ImageFile(path, detail);
export const describedImages = (text: string, images: ImageValue | ImageValue[]) => new DescribedImages(text, images);

function isImageValue(value: unknown): value is ImageValue {
  return isImageUrl(value) || isImageFile(value);
}

export const isImageUrl = (value: unknown): value is ImageUrl => kindOf(value) === 'image_url';
export const isImageFile = (value: unknown): value is ImageFile => kindOf(value) === 'image_file';
export const isDescribedImages = (value: unknown): value is DescribedImages => kindOf(value) === 'described_images';

/** Whether a tool's return value is multimodal (one image, a non-empty list of images, or a description with images). */
export function isMultimodalResult(value: unknown): value is ImageValue | ImageValue[] | DescribedImages {
  return (
    isImageValue(value) ||
    isDescribedImages(value) ||
    (Array.isArray(value) && value.length > 0 && value.every(isImageValue))
  );
}
