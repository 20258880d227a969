import { join } from 'node:path';

/** The checkout's root folder. */
export const repositoryRoot = join(__dirname, '..');
/**
 * The Python venv scripts/setup.sh makes (`.venv`): the reference, moto's S3 server, Temporal's
 * Python SDK, Python's MCP SDK. `PATCHLOOP_TEST_VENV` points the tests at another one (a clone that
 * must not change a shared venv tries a new package version there).
 */
export const testVenv = process.env['PATCHLOOP_TEST_VENV'] || join(repositoryRoot, '.venv');
/** That venv's Python. */
export const venvPython = join(testVenv, 'bin', 'python');
