import { readFile, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import type { JsonObject, JsonValue, Message, MultimodalToolResultMutation } from '../context';
import {
  isDescribedImages,
  isImageFile,
  isImageUrl,
  type DescribedImages,
  type ImageFile,
  type ImageValue,
} from '../tools/images';

const MIME_BY_EXTENSION: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
};

export class ImageError extends Error {
  override readonly name = 'ImageError';
}

/**
 * The `MultimodalToolResultMutation` for a tool's image result (spec 7.6): one user message holding the
 * caption the spec fixes and one image part per image (`detail` defaults to "auto"). Files become data
 * URLs; any image above `maxImageBytes` fails the call instead of breaking Temporal's payload limit.
 */
export async function multimodalMutation(
  call: { id: string; name: string; arguments: string },
  value: ImageValue | ImageValue[] | DescribedImages,
  maxImageBytes: number,
): Promise<MultimodalToolResultMutation> {
  const description = isDescribedImages(value) ? value.text : null;
  const images = isDescribedImages(value) ? value.images : value;
  const list = Array.isArray(images) ? images : [images];
  if (list.length === 0) throw new ImageError('no images to return');
  const kind = Array.isArray(images) ? 'images' : isImageFile(images) ? 'an image file' : 'an image';
  const caption =
    description === null
      ? `This is ${kind} returned by tool '${call.name}':`
      : `This is ${kind} and description returned by tool '${call.name}': ${description}`;
  const parts = await Promise.all(list.map((image) => imagePart(image, maxImageBytes)));
  const message: Message = { role: 'user', content: [{ type: 'text', text: caption }, ...parts] };
  return {
    type: 'MultimodalToolResultMutation',
    tool_call_id: call.id,
    tool_name: call.name,
    arguments: call.arguments,
    user_messages: [message],
  };
}

/** Data URLs in events keep this many characters (the image itself is in the request, not the log). */
const DATA_URL_PREVIEW_CHARS = 64;

/**
 * A tool's image return value as JSON, for `tool_call_end.result` (spec 7.8: the raw value, not the
 * restructured messages): URLs and paths as returned, data URLs shortened with their length.
 */
export function describeImages(value: ImageValue | ImageValue[] | DescribedImages): JsonValue {
  if (Array.isArray(value)) return value.map((image) => describeImages(image));
  if (isDescribedImages(value)) return { text: value.text, images: describeImages(value.images) };
  const described: JsonObject = isImageFile(value)
    ? { type: 'image_file', path: value.path }
    : value.url.startsWith('data:') && value.url.length > DATA_URL_PREVIEW_CHARS
      ? { type: 'image_url', url: `${value.url.slice(0, DATA_URL_PREVIEW_CHARS)}…`, url_chars: value.url.length }
      : { type: 'image_url', url: value.url };
  if (value.detail !== undefined) described['detail'] = value.detail;
  return described;
}

async function imagePart(image: ImageValue, maxImageBytes: number) {
  const url = isImageUrl(image) ? checkedUrl(image.url, maxImageBytes) : await fileDataUrl(image, maxImageBytes);
  return { type: 'image_url', image_url: { url, detail: image.detail ?? 'auto' } };
}

function checkedUrl(url: string, maxImageBytes: number): string {
  if (url.startsWith('data:')) {
    const match = /^data:(image\/[\w.+-]+);base64,([A-Za-z0-9+/=\s]*)$/.exec(url);
    if (!match) throw new ImageError('a data URL image must look like data:image/<type>;base64,<payload>');
    const bytes = Math.floor((match[2]!.replace(/\s/g, '').length * 3) / 4);
    if (bytes > maxImageBytes) throw new ImageError(`image is too large: ${bytes} bytes (limit ${maxImageBytes})`);
    return url;
  }
  if (!/^https?:\/\//i.test(url))
    throw new ImageError(`an image URL must be http(s) or a data URL: ${url.slice(0, 80)}`);
  return url;
}

async function fileDataUrl(image: ImageFile, maxImageBytes: number): Promise<string> {
  const mime = MIME_BY_EXTENSION[extname(image.path).toLowerCase()];
  if (!mime) throw new ImageError(`unsupported image file type: ${image.path} (png, jpg, gif or webp)`);
  const info = await stat(image.path).catch(() => {
    throw new ImageError(`image file not found: ${image.path}`);
  });
  if (info.size > maxImageBytes)
    throw new ImageError(`image is too large: ${info.size} bytes (limit ${maxImageBytes})`);
  return `data:${mime};base64,${(await readFile(image.path)).toString('base64')}`;
}
