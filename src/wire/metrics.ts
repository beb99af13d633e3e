import { fromMicros } from '../engine/decimal';

export const metricTotal = (micros: number) => fromMicros(micros);
