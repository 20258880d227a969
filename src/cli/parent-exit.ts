/**
 * Calls `onExit` once the process that started this one has exited (this process was re-parented), and
 * returns a function that stops watching. The parent id is read again at each check: the kernel
 * changes it when the parent exits, and nothing is signalled to the child.
 */
export function onParentExit(onExit: () => void, intervalMs = 250): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onExit();
  }, intervalMs);
  // The watch alone never keeps the process alive.
  timer.unref();
  return () => clearInterval(timer);
}
