import { proxySinks } from '@temporalio/workflow';
import type { PatchloopSinks } from '../common';

export const sinks = proxySinks<PatchloopSinks>();
