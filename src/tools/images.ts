/**
 * Image values a tool may return (spec 7.6): they become a `MultimodalToolResultMutation`, because
 * providers accept images only in user messages.
 */

/** An image the provider fetches itself: an `https://` (or `http://`) URL, or a `data:image/...` URL. */
export class ImageUrl {
  constructor(
    readonly url: string,
    readonly detail?: string,
  ) {}
}

/** A local image file, read by the tool activity and sent as a `data:` URL. */
export class ImageFile {
  constructor(
    readonly path: string,
    readonly detail?: string,
  ) {}
}

export type ImageValue = ImageUrl | ImageFile;

/** A description plus one image or a list of images. */
export class DescribedImages {
  constructor(
    readonly text: string,
    readonly images: ImageValue | ImageValue[],
  ) {}
}

export const imageUrl = (url: string, detail?: string) => new ImageUrl(url, detail);
export const imageFile = (path: string, detail?: string) => new ImageFile(path, detail);
export const describedImages = (text: string, images: ImageValue | ImageValue[]) => new DescribedImages(text, images);

export function isImageValue(value: unknown): value is ImageValue {
  return value instanceof ImageUrl || value instanceof ImageFile;
}

/** Whether a tool's return value is multimodal (one image, a non-empty list of images, or a description with images). */
export function isMultimodalResult(value: unknown): value is ImageValue | ImageValue[] | DescribedImages {
  return (
    isImageValue(value) ||
    value instanceof DescribedImages ||
    (Array.isArray(value) && value.length > 0 && value.every(isImageValue))
  );
}
