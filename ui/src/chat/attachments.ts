// Images in the composer before they are sent: which files are taken (PNG, JPEG, GIF, WebP
// up to 20 MB, the core's own limits), what the user is told about the others, and where
// pasted or dropped files come from. No Svelte, no IPC: the composer owns those.

/** The image types the core accepts (`IMAGE_MIME_TYPES` in vigil-protocol). */
export const IMAGE_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

/** The largest image sent (`MAX_ATTACHMENT_BYTES`): 20 MB, before downscaling. */
export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;

/** One image waiting in the composer. */
export interface Draft {
  /** Unique in the composer, for `{#each}` keys and removal. */
  id: string;
  file: File;
  /** An object URL of the file, for the thumbnail; revoked when the draft goes. */
  url: string;
}

/** "3.4 MB", as the core words sizes. */
export function sizeText(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/** Why `file` cannot be sent, or null when it can. */
export function refusal(file: File): string | null {
  const name = file.name || 'The pasted image';
  if (!IMAGE_TYPES.includes(file.type)) return `${name} is not a PNG, JPEG, GIF or WebP image.`;
  if (file.size > MAX_IMAGE_BYTES) return `${name} is ${sizeText(file.size)}; images up to 20 MB can be sent.`;
  return null;
}

/** The files a paste or a drop carries (a screenshot pasted from the clipboard is one). */
export function filesOf(data: DataTransfer | null): File[] {
  if (!data) return [];
  const files = [...data.files];
  if (files.length > 0) return files;
  return [...data.items].flatMap((item) => {
    const file = item.kind === 'file' ? item.getAsFile() : null;
    return file ? [file] : [];
  });
}

/** Whether a drag carries files (so the composer shows where to drop them). */
export function carriesFiles(data: DataTransfer | null): boolean {
  return !!data && [...data.types].includes('Files');
}

/**
 * Splits picked, pasted or dropped files into those taken and one line about the rest
 * (null when all were taken).
 */
export function sortFiles(files: File[]): { taken: File[]; problem: string | null } {
  const taken: File[] = [];
  const problems: string[] = [];
  for (const file of files) {
    const why = refusal(file);
    if (why) problems.push(why);
    else taken.push(file);
  }
  return { taken, problem: problems.length > 0 ? problems.join(' ') : null };
}
